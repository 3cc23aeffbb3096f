"""``busprobe sim serve``: the simulated USB device on a usbredir socket.

:func:`serve_usbredir` starts the simulation of a ``sim:usb2`` selector (the gateware, the ULPI
PHY model and the host-controller model that carries every transfer out), listens on a TCP
address or a Unix socket, and serves the first usbredir guest that connects (QEMU's
``-chardev socket,...`` + ``-device usb-redir,chardev=...``) until it disconnects or the
simulation dies.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

from busprobe import __version__
from busprobe.buses import USB2_HS
from busprobe.targets import describe
from busprobe.transport import DeviceGone, InvalidRequest

from ..usb2.backend import SimUsb2Platform
from .usbredir_export import UsbredirExport

__all__ = ["serve_usbredir", "listen", "check_simulator"]


def listen(address: str) -> socket.socket:
    """A listening socket: ``HOST:PORT`` (TCP; port 0 picks one) or a Unix socket path (any
    text with a ``/``). One-line ``InvalidRequest`` for anything else."""
    if "/" in address:
        path = Path(address)
        if path.is_socket():
            path.unlink()  # a stale socket of an earlier run; any other file is refused by bind
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
    else:
        host, sep, port = address.rpartition(":")
        if not sep or not host or not port.isdigit() or int(port) > 65535:
            raise InvalidRequest(f"usbredir address {address!r}: expected HOST:PORT or a Unix "
                                 "socket path")
        sock = socket.create_server((host.strip("[]"), int(port)), reuse_port=False)
    sock.listen(1)
    return sock


def describe_listener(sock: socket.socket) -> str:
    name = sock.getsockname()
    return name if isinstance(name, str) else f"{name[0]}:{name[1]}"


def serve_usbredir(selector: str, address: str, *,
                   on_ready: Callable[[str], None] = lambda line: None) -> str:
    """Simulate ``selector``, serve one usbredir guest on ``address``; return why it ended.

    ``on_ready`` gets one line once the device is enumerated in the simulation and the socket
    listens (a harness starts its guest then).
    """
    target = describe(selector, sysfs_root=None)
    if target.spec is not USB2_HS or not target.simulated:
        raise InvalidRequest(f"{selector}: only simulated USB devices (sim:usb2) can be exported "
                             "over usbredir")
    platform = SimUsb2Platform(target)
    with listen(address) as listener:  # a bad address is refused before minutes of simulation
        platform.open()
        try:
            on_ready(f"serving {selector} (pid {os.getpid()}) as usbredir on "
                     f"{describe_listener(listener)}")
            connection, _ = listener.accept()
            with connection:
                export = UsbredirExport(platform, connection, version=f"busprobe {__version__}",
                                        check_device=lambda: check_simulator(platform))
                return export.serve()
        finally:
            platform.close()


def check_simulator(platform: SimUsb2Platform) -> None:
    """:class:`DeviceGone` once the simulation behind ``platform`` has ended."""
    server = platform.server
    if server is None or server.proc.poll() is not None:
        raise DeviceGone(f"{platform.name}: the simulator exited")
