"""The bus registry: every row names code that exists and agrees with its transports."""

import pytest
from busprobe import buses
from busprobe.lengths import default_lengths
from busprobe.model import DIRECTIONS
from busprobe.targets import describe, open_transport
from busprobe.transport import InvalidRequest

NAMED = ("describe_real", "real_backend", "describe_sim", "sim_backend", "ceiling", "link_only")


@pytest.mark.parametrize("bus", buses.BUSES, ids=lambda b: b.kind)
def test_every_name_a_row_gives_can_be_loaded(bus):
    for field in NAMED:
        if field.endswith("_sim") or field == "sim_backend":
            if bus.sim_target is None:  # a null disk is simulated through a kernel only
                assert getattr(bus, field) == ""
                continue
        assert callable(buses.load(getattr(bus, field))), field


def test_kinds_schemes_and_simulated_targets_are_each_one_row():
    for key in ("kind", "scheme", "sim_target"):
        values = [getattr(bus, key) for bus in buses.BUSES if getattr(bus, key) is not None]
        assert len(set(values)) == len(values), key
    assert buses.by_kind("pcie") is buses.PCIE and buses.by_scheme("usb") is buses.USB2_HS
    assert buses.by_sim_target("usb2") is buses.USB2_HS
    assert buses.by_sim_target("usb3") is buses.USB3_SS
    assert DIRECTIONS == {"usb2-hs": ("in", "out", "loopback"),
                          "usb3-ss": ("in", "out", "loopback"),
                          "pcie": ("write", "read", "loopback"), "usb-storage": ("read", "write")}
    assert buses.by_scheme("block") is buses.USB_STORAGE


def test_a_superspeed_device_has_no_selector_scheme_of_its_own():
    # usb:VID:PID opens either USB device; its INFO answer says which bus kind it is on.
    assert buses.USB3_SS.scheme is None
    assert buses.schemes() == ("usb", "pcie", "block", "sim")
    assert buses.by_scheme("usb") is buses.USB2_HS


@pytest.mark.parametrize("selector", ["sim:usb2", "sim:usb3", "sim:pcie"])
def test_a_simulated_transport_has_its_rows_kind_and_directions(selector):
    target = describe(selector)
    transport = open_transport(target)  # built, not opened
    assert transport.directions == target.spec.directions
    assert transport.bus.kind == target.spec.kind


def test_sweep_defaults_come_from_the_row():
    assert default_lengths("usb2-hs")[0] == buses.USB2_HS.default_min_length == 512
    assert default_lengths("pcie")[0] == buses.PCIE.default_min_length == 256
    assert default_lengths("usb3-ss")[0] == buses.USB3_SS.default_min_length == 1024
    with pytest.raises(ValueError, match="unknown bus kind 'usb4'"):
        default_lengths("usb4")


def test_a_missing_module_is_one_line_naming_the_extra():
    with pytest.raises(InvalidRequest) as info:
        buses.load("busprobe.sim.nonexistent:open", buses.SIM_EXTRA_HINT)
    message = str(info.value)
    assert "\n" not in message
    assert message.endswith("pip install 'busprobe[sim]' (make demo installs it)")


def test_unknown_names_list_what_exists():
    with pytest.raises(InvalidRequest, match=r"no simulated target 'usb4' \(available: pcie, "
                                             r"usb2, usb3\)"):
        buses.by_sim_target("usb4")
    assert buses.selector_syntax() == ("usb:VID:PID[#SERIAL], pcie:DDDD:BB:DD.F, block:/dev/sdX "
                                       "or sim:usb2|usb3|pcie[?key=value&...]")
