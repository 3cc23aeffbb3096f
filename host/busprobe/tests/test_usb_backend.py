"""The libusb backend without a device: a real libusb context, error mapping, the udev rule
(selector parsing: test_selectors.py)."""

import pytest
from busprobe.backends.usb import (
    load_usb1,
    map_usb_error,
    transfer_status_error,
    udev_install_command,
    udev_rule_path,
)
from busprobe.cli import main
from busprobe.protocol import usb2
from busprobe.targets import open_transport
from busprobe.transport import (
    DeviceGone,
    DeviceNotFound,
    EndpointStalled,
    InvalidRequest,
    PermissionDenied,
    TransferTimeout,
    TransportError,
)


def test_usb_selectors_take_no_options():
    with pytest.raises(InvalidRequest, match=r"unknown option\(s\) speed \(it takes no options\)"):
        open_transport("usb:1209:0001?speed=high")


def test_opening_an_absent_device_with_real_libusb_says_not_found():
    transport = open_transport("usb:1209:0001#NOPE")
    with pytest.raises(DeviceNotFound, match="usb:1209:0001#NOPE: no such USB device"):
        transport.open()
    transport.close()  # closing a transport that never opened is harmless


def test_sweep_on_an_absent_device_is_one_line_exit_2(capsys, tmp_path):
    status = main(["sweep", "--device", "usb:1209:0001", "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "no such USB device" in err


@pytest.mark.parametrize("name, kind, text", [
    ("USBErrorAccess", PermissionDenied, "60-busprobe.rules"),
    ("USBErrorNotFound", DeviceNotFound, "not found"),
    ("USBErrorNoDevice", DeviceGone, "gone"),
    ("USBErrorTimeout", TransferTimeout, "timed out"),
    ("USBErrorBusy", TransportError, "busy"),
    ("USBErrorPipe", TransportError, "LIBUSB_ERROR_PIPE"),
])
def test_libusb_errors_map_to_transport_errors_with_one_line(name, kind, text):
    usb1 = load_usb1()
    exc = getattr(usb1, name)(getattr(usb1, name).value)
    error = map_usb_error(exc, "usb:1209:0001")
    assert type(error) is kind and text in str(error) and "\n" not in str(error)


def test_permission_message_names_the_shipped_rule_and_the_install_command():
    usb1 = load_usb1()
    message = str(map_usb_error(usb1.USBErrorAccess(usb1.USBErrorAccess.value), "usb:x"))
    assert udev_install_command() in message and "udevadm" in message
    with open(udev_rule_path()) as rule:
        text = rule.read()
    assert f'ATTR{{idVendor}}=="{usb2.VID:04x}"' in text
    assert f'ATTR{{idProduct}}=="{usb2.PID:04x}"' in text


@pytest.mark.parametrize("status, kind", [
    ("TRANSFER_NO_DEVICE", DeviceGone), ("TRANSFER_TIMED_OUT", TransferTimeout),
    ("TRANSFER_STALL", EndpointStalled), ("TRANSFER_OVERFLOW", TransportError),
    ("TRANSFER_ERROR", TransportError),
])
def test_async_transfer_statuses_map_to_transport_errors(status, kind):
    usb1 = load_usb1()
    assert type(transfer_status_error(getattr(usb1, status), "in transfer")) is kind


def test_list_works_with_no_device_and_names_the_sim_targets(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "USB:" in out and "PCIe:" in out and "sim:usb2" in out and "sim:pcie" in out


def test_list_finds_pcie_functions_by_the_designs_ids_in_sysfs(tmp_path):
    from busprobe.cli.list import find_pcie
    from busprobe.protocol import pcie

    for name, vendor, device in (("0000:01:00.0", pcie.VENDOR_ID, pcie.DEVICE_ID),
                                 ("0000:00:1f.0", 0x8086, 0x1234)):
        function = tmp_path / name
        function.mkdir()
        (function / "vendor").write_text(f"{vendor:#06x}\n")
        (function / "device").write_text(f"{device:#06x}\n")
    (tmp_path / "0000:02:00.0").mkdir()  # unreadable ids are skipped, not fatal
    found = find_pcie(tmp_path)
    assert [entry["selector"] for entry in found] == ["pcie:0000:01:00.0"]
    assert found[0]["driver"] is None
