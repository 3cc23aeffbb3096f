"""The selector grammar: schemes, options once each, USB and PCI addresses."""

import pytest
from busprobe.selectors import UsbTarget, parse_pci_address, parse_selector, parse_usb_target
from busprobe.transport import InvalidRequest


def test_a_selector_splits_into_scheme_target_and_string_options():
    sel = parse_selector("sim:pcie?gen=2&cap=")
    assert (sel.scheme, sel.target, dict(sel.options)) == ("sim", "pcie", {"gen": "2", "cap": ""})
    assert parse_selector("usb:1209:0001#SER").target == "1209:0001#SER"


@pytest.mark.parametrize(("text", "message"), [
    ("usb1209", "bad device selector 'usb1209'"),
    ("sim:", "bad device selector 'sim:'"),
    ("sim:pcie?mps=128&mps=256", "option mps given more than once (mps=128, mps=256)"),
    ("sim:pcie?gen", "bad options 'gen'"),
])
def test_malformed_selectors_are_one_line(text, message):
    with pytest.raises(InvalidRequest) as info:
        parse_selector(text)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(("target", "expected"), [
    ("1209:0001", UsbTarget(0x1209, 0x0001)),
    ("1209:0001#BP2-0001", UsbTarget(0x1209, 0x0001, "BP2-0001")),
    ("ABCD:ef01", UsbTarget(0xABCD, 0xEF01)),
    ("1209:0001@1-2", UsbTarget(0x1209, 0x0001, port="1-2")),
    ("1209:0001#BP2-0001@3-1.4", UsbTarget(0x1209, 0x0001, "BP2-0001", "3-1.4")),
])
def test_usb_targets_parse_hex_ids_an_optional_serial_and_port(target, expected):
    assert parse_usb_target(target) == expected
    assert parse_usb_target(str(expected).removeprefix("usb:")) == expected


@pytest.mark.parametrize("target", ["1209", "1209:", ":0001", "1209:0001:3", "xyz:0001",
                                    "12345:0001"])
def test_malformed_usb_targets_say_what_is_expected(target):
    with pytest.raises(InvalidRequest, match=r"expected usb:VID:PID\[#SERIAL\]\[@PORT\]"):
        parse_usb_target(target)


@pytest.mark.parametrize("target", ["1209:0001@", "1209:0001@1", "1209:0001@1-", "1209:0001@x-1",
                                    "1209:0001#S@1-2."])
def test_a_malformed_usb_port_says_what_a_port_path_is(target):
    with pytest.raises(InvalidRequest, match=r"bad USB port .* e\.g\. @1-2 or @3-1\.4"):
        parse_usb_target(target)


def test_pci_addresses_are_full_and_lower_case():
    assert parse_pci_address("0000:0A:00.1") == "0000:0a:00.1"
    for bad in ("01:00.0", "0000:01:00.8", "0000:01:00"):
        with pytest.raises(InvalidRequest, match="expected DDDD:BB:DD.F"):
            parse_pci_address(bad)
