"""A streamed sweep against the storage personality (``usb2-storage``, whose GET_INFO names
:attr:`~busprobe.protocol.usb2.Feature.STORAGE`) is refused in one line saying what measures it
instead, before any bulk transfer: its endpoints answer SCSI commands only, so a stream would
NAK until the timeout. ``--protocol bot``/``uas`` frame READ(10)/WRITE(10) for it (the sweep of
the simulated disk: ``sim/usb2/tests/test_usb2_disk_sweep_sim.py``); ``uas`` on any other
design is one line too."""

import pytest
from busprobe.backends.usb.transport import DISK_REFUSAL
from busprobe.cli import main
from busprobe.protocol import usb2
from busprobe.targets import open_transport
from busprobe.transport import InvalidRequest

SELECTOR = f"usb:{usb2.VID:04x}:{usb2.PID:04x}"


def test_get_info_decodes_the_storage_bit():
    info = usb2.unpack_info(usb2.pack_info(usb2.Feature.STORAGE))
    assert info["features"] == usb2.Feature.STORAGE
    assert usb2.Feature.STORAGE not in usb2.ALL_FEATURES  # a personality, not a usb2-full part


def test_a_streamed_sweep_of_the_disk_is_one_line_naming_what_measures_it(fake_bus, capsys):
    bus = fake_bus(features=usb2.Feature.STORAGE)
    with open_transport(SELECTOR) as transport:
        assert usb2.Feature.STORAGE in transport.requests.features
        with pytest.raises(InvalidRequest, match="usb2-storage null disk"):
            transport.validate("in", 4096, 1)
    assert bus.submits == 0
    assert main(["sweep", "--device", SELECTOR, "--direction", "in",
                 "--lengths", "4096", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.endswith(DISK_REFUSAL), err
    assert "block:/dev/sdX" in err and "--protocol uas" in err and bus.submits == 0


@pytest.mark.parametrize(("protocol", "alternate"), [("bot", 0), ("uas", 1)])
def test_the_disk_framings_select_their_alternate_through_libusb(fake_bus, protocol, alternate):
    """SET_INTERFACE goes through libusb's own call (the kernel must switch its endpoint table),
    and no SET_DATA_MODE is sent: the disk has no data modes."""
    bus = fake_bus(features=usb2.Feature.STORAGE)
    with open_transport(SELECTOR) as transport:
        transport.set_protocol(protocol)
        transport.validate("in", 4096, 1)
        assert transport.checks_own_data
        with pytest.raises(InvalidRequest, match="whole 512-byte blocks"):
            transport.validate("in", 1000, 1)
    assert bus.alternates == [(0, alternate)] and bus.modes == [] and bus.submits == 0


def test_uas_on_a_design_that_is_not_the_disk_is_one_line(fake_bus, capsys):
    bus = fake_bus(features=usb2.ALL_FEATURES)
    assert main(["sweep", "--device", SELECTOR, "--protocol", "uas", "--direction", "in",
                 "--lengths", "4096", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "UAS framing needs the usb2-storage null disk" in err, err
    assert bus.submits == 0 and bus.alternates == []


def test_the_probe_designs_still_stream(fake_bus):
    fake_bus(features=usb2.ALL_FEATURES)
    with open_transport(SELECTOR) as transport:
        transport.validate("in", 4096, 1)  # no refusal: usb2-full is not the disk


def test_the_simulated_disk_is_refused_before_its_simulator_is_built(capsys):
    assert main(["sweep", "--device", "sim:usb2?host=xhci&design=storage", "--direction", "in",
                 "--lengths", "4K", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.endswith(DISK_REFUSAL), err
