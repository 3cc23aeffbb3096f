"""The busprobe USB device: one driver for the board and the simulation.

:class:`~.transport.UsbDeviceTransport` is the device driver every USB sweep runs (vendor
requests, telemetry, validation, bulk streams). It drives the device through a
:class:`~.platform.UsbPlatform`: endpoint 0 and bulk streams with a queue depth. Two exist:

``libusb_platform``  a board on this machine's bus (python-libusb1, asynchronous transfers)
``busprobe.sim.usb2.backend``  the gateware in Verilator behind the ULPI host model

:func:`open_usb` is the factory for ``usb:VID:PID[#SERIAL]`` selectors.
"""

from .libusb import (
           load_usb1,
           map_usb_error,
           transfer_status_error,
           udev_install_command,
           udev_rule_path,
)
from .libusb_platform import SPEED_NAMES, LibusbPlatform, open_usb
from .platform import UsbPlatform
from .requests import VendorRequests
from .transport import UsbDeviceTransport

__all__ = ["open_usb", "UsbDeviceTransport", "UsbPlatform", "LibusbPlatform", "VendorRequests",
           "load_usb1", "map_usb_error", "transfer_status_error",
           "udev_rule_path", "udev_install_command", "SPEED_NAMES"]
