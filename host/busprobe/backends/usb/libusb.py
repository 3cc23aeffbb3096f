"""libusb-1.0 access for the USB backend: loading the library, error mapping, the udev rule.

libusb errors become :mod:`busprobe.transport` errors with one-line messages: not found →
DeviceNotFound, no device → DeviceGone, access → PermissionDenied (naming the shipped udev rule),
timeout → TransferTimeout.
"""

from __future__ import annotations

import ctypes
import importlib.resources
from pathlib import Path
from typing import Any

from ...transport import (
    DeviceGone,
    DeviceNotFound,
    EndpointStalled,
    PermissionDenied,
    TransferTimeout,
    TransportError,
)

__all__ = ["load_usb1", "map_usb_error", "transfer_status_error", "udev_rule_path",
           "udev_install_command", "libusb_library_path"]

def udev_rule_path() -> str:
    """Where the shipped udev rule is installed with busprobe."""
    return str(importlib.resources.files("busprobe") / "udev" / "60-busprobe.rules")


def udev_install_command() -> str:
    return (f"sudo install -m 644 {udev_rule_path()} /etc/udev/rules.d/ && "
            "sudo udevadm control --reload-rules && sudo udevadm trigger")


def load_usb1() -> Any:
    """Import python-libusb1 with a libusb-1.0 library loaded: the system's if it has one,
    else the copy the ``libusb-package`` wheel ships."""
    import usb1

    try:
        import usb1.libusb1  # importing it loads the system library
    except OSError:
        try:
            import libusb_package
        except ImportError:
            raise DeviceNotFound("libusb-1.0 is not installed: apt install libusb-1.0-0 "
                                 "or pip install libusb-package") from None
        path = libusb_package.get_library_path()
        if path is None:
            raise DeviceNotFound("libusb-1.0 is not installed: apt install libusb-1.0-0") from None
        usb1.loadLibrary(ctypes.CDLL(str(path)))
    return usb1


def libusb_library_path() -> str:
    """The file of the libusb-1.0 :func:`load_usb1` would load (to link native code against),
    found without loading it into python-libusb1: the system's, else the ``libusb-package``
    wheel's."""
    import ctypes.util

    name = ctypes.util.find_library("usb-1.0")
    if name is None:
        try:
            import libusb_package
        except ImportError:
            raise DeviceNotFound("libusb-1.0 is not installed") from None
        path = libusb_package.get_library_path()
        if path is None:
            raise DeviceNotFound("libusb-1.0 is not installed")
        return str(path)
    ctypes.CDLL(name)
    # Loaded by soname: its file is where the dynamic loader mapped it.
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if path.startswith("/") and Path(path).name.startswith("libusb-1.0.so"):
                return path
    raise DeviceNotFound(f"cannot tell where {name} is loaded from")


def map_usb_error(exc: Exception, what: str) -> TransportError:
    """The :class:`TransportError` for a python-libusb1 exception, with a one-line message."""
    usb1 = load_usb1()
    if isinstance(exc, usb1.USBErrorAccess):
        return PermissionDenied(f"{what}: permission denied; install the udev rule shipped with "
                                f"busprobe ({udev_install_command()}) and replug the device")
    if isinstance(exc, usb1.USBErrorNotFound):
        return DeviceNotFound(f"{what}: not found")
    if isinstance(exc, usb1.USBErrorNoDevice):
        return DeviceGone(f"{what}: the device is gone (unplugged or reset)")
    if isinstance(exc, usb1.USBErrorTimeout):
        return TransferTimeout(f"{what}: timed out")
    if isinstance(exc, usb1.USBErrorBusy):
        return TransportError(f"{what}: interface busy (another program has claimed it)")
    return TransportError(f"{what}: {exc}")


def transfer_status_error(status: int, what: str) -> TransportError:
    """The error for an asynchronous transfer that completed with ``status`` (not COMPLETED)."""
    usb1 = load_usb1()
    if status == usb1.TRANSFER_NO_DEVICE:
        return DeviceGone(f"{what}: the device is gone (unplugged or reset)")
    if status == usb1.TRANSFER_TIMED_OUT:
        return TransferTimeout(f"{what}: timed out")
    if status == usb1.TRANSFER_STALL:
        return EndpointStalled(f"{what}: the endpoint stalled")
    if status == usb1.TRANSFER_OVERFLOW:
        return TransportError(f"{what}: the device sent more data than asked (overflow)")
    if status == usb1.TRANSFER_CANCELLED:
        return TransportError(f"{what}: cancelled")
    return TransportError(f"{what}: transfer failed (libusb status {status})")
