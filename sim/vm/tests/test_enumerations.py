"""Reading a guest's kernel log for its enumerations: the lines of issue 47's slow xHCI
enumeration (five timed-out descriptor reads before the device came) and a clean one."""

from busprobe.sim.vm.enumerations import enumerations, retries

SLOW_THEN_CLEAN = """\
[    9.101010] usb 1-1: new high-speed USB device number 2 using xhci_hcd
[   14.520001] usb 1-1: device descriptor read/64, error -110
[   30.050000] usb 1-1: device descriptor read/64, error -110
[   30.210000] usb 1-1: new high-speed USB device number 3 using xhci_hcd
[   35.640000] usb 1-1: device descriptor read/64, error -110
[   51.080000] usb 1-1: device descriptor read/64, error -110
[   51.100000] usb usb1-port1: attempt power cycle
[   52.200000] usb 1-1: new high-speed USB device number 4 using xhci_hcd
[   57.630000] usb 1-1: device descriptor read/64, error -110
[   60.880000] usb 1-1: New USB device found, idVendor=1209, idProduct=0001, bcdDevice= 1.00
[   60.880100] usb 1-1: Product: busprobe
[   61.000000] usb-storage 1-1:1.0: USB Mass Storage device detected
[   70.000000] usb 1-2: new SuperSpeed USB device number 5 using xhci_hcd
[   70.400000] usb 1-2: New USB device found, idVendor=1209, idProduct=0001, bcdDevice= 1.00
[   80.000000] usb 1-3: new high-speed USB device number 6 using xhci_hcd
"""


def test_each_enumeration_with_its_time_and_its_failed_attempts():
    found = enumerations(SLOW_THEN_CLEAN)
    assert [(e.port, e.speed, e.driver, e.retries) for e in found] == [
        ("1-1", "high-speed", "xhci_hcd", 5), ("1-2", "SuperSpeed", "xhci_hcd", 0),
        ("1-3", "high-speed", "xhci_hcd", 0)]
    assert round(found[0].seconds, 2) == 51.78 and round(found[1].seconds, 2) == 0.4
    assert found[2].seconds is None  # never got there


def test_retry_lines_are_the_failed_attempts_only():
    assert len(retries(SLOW_THEN_CLEAN)) == 5
    assert retries("[ 1.0] usb 1-1: device not accepting address 2, error -71\n")
    assert not retries("[ 1.0] usb 1-1: New USB device found, idVendor=1209\n")
