"""``busprobe sim serve``: the simulated USB device on a usbredir socket, as a service.

:func:`serve_usbredir` starts the simulation of a ``sim:usb2`` or ``sim:usb3`` selector (the
gateware, its PHY or PIPE model and the host-controller model that carries every transfer out; the
SuperSpeed device is announced at speed ``super``), listens on a TCP
address (loopback unless the user names another) or a Unix socket, and serves usbredir guests
(QEMU's ``-chardev socket,...`` + ``-device usb-redir,chardev=...``) one at a time
(:class:`UsbredirService`): after a guest leaves, the device is reset on its bus, as a replug
would, and the next one is accepted. A guest that connects while another is served gets our
hello naming the reason in its version text, then the connection closes. It runs until Ctrl-C
or SIGTERM (the caller's :class:`KeyboardInterrupt`) or until the simulation dies.
"""

from __future__ import annotations

import errno
import logging
import os
import queue
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from busprobe import __version__
from busprobe.buses import USB2_HS, USB3_SS
from busprobe.os_errors import describe
from busprobe.targets import describe as describe_target
from busprobe.transport import DeviceGone, InvalidRequest, TransportError

from ..usb2.backend import SimUsb2Platform
from ..usb3.backend import SimUsb3Platform
from ..usb_platform import SimUsbPlatform
from .usbredir_export import CAPABILITIES, UsbredirExport
from .usbredir_wire import Negotiated, Speed

__all__ = ["serve_usbredir", "listen", "check_simulator", "UsbredirService", "LOOPBACK"]

log = logging.getLogger(__name__)

#: Where ``PORT`` alone (or ``:PORT``) listens: this computer only.
LOOPBACK = "127.0.0.1"
_IDLE_CHECK_S = 0.5
#: How long a guest that connects while another is served waits for it to be gone before it is
#: turned away (the last one may be closing).
_CLOSING_S = 0.5
#: What a bind failure means, and what to do about it.
_BIND_ADVICE = {
    errno.EADDRINUSE: "another program (or another busprobe sim serve) listens there: choose "
                      "another port with --usbredir PORT, or --usbredir 0 for a free one",
    errno.EACCES: "ports below 1024 need root: choose a port from 1024 up (--usbredir PORT)",
    errno.EADDRNOTAVAIL: "leave it out (--usbredir PORT listens on 127.0.0.1) or name one of "
                         "this computer's own",
}


def _tcp_address(address: str) -> tuple[str, int]:
    """``(host, port)`` of ``HOST:PORT``, ``:PORT`` or ``PORT`` (the last two on loopback)."""
    host, sep, port = address.rpartition(":")
    if not sep:
        host, port = LOOPBACK, address
    host = host.strip("[]") or LOOPBACK
    if not port.isdigit() or int(port) > 65535:
        raise InvalidRequest(f"usbredir address {address!r}: expected PORT, HOST:PORT or a Unix "
                             "socket path")
    return host, int(port)


def listen(address: str) -> socket.socket:
    """A listening socket: ``PORT`` or ``:PORT`` (127.0.0.1), ``HOST:PORT`` (TCP; port 0 picks
    one) or a Unix socket path (any text with a ``/``). One-line ``InvalidRequest`` for anything
    else, and for a bind that fails (the port in use: which option picks another)."""
    if "/" in address:
        path = Path(address)
        if path.is_socket():
            path.unlink()  # a stale socket of an earlier run; any other file is refused by bind
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        where, target = str(path), str(path)
    else:
        host, port = _tcp_address(address)
        where = f"{host}:{port}"
        try:
            family, _, _, _, target = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        except socket.gaierror:
            raise InvalidRequest(f"cannot listen on {where}: unknown host name {host!r}; name "
                                 "an address of this computer, or leave it out for "
                                 f"{LOOPBACK}") from None
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(target)
        sock.listen(4)
    except OSError as exc:
        sock.close()
        advice = _BIND_ADVICE.get(exc.errno or 0)
        if exc.errno == errno.EADDRINUSE and "/" in address:
            advice = "the path exists and is not a socket: remove it or choose another"
        raise InvalidRequest(describe(exc, f"cannot listen on {where}", advice)) from None
    return sock


def describe_listener(sock: socket.socket) -> str:
    name = sock.getsockname()
    return name if isinstance(name, str) else f"{name[0]}:{name[1]}"


#: The simulated buses that can be exported: bus kind -> (platform, the speed the guest is told).
#: usbredir's ``super`` puts the device on a SuperSpeed port of QEMU's xHCI (docs/DESIGN.md §7.1).
EXPORTABLE: dict[str, tuple[Callable[[Any], SimUsbPlatform], Speed]] = {
    USB2_HS.kind: (SimUsb2Platform, Speed.HIGH),
    USB3_SS.kind: (SimUsb3Platform, Speed.SUPER),
}


class UsbredirService:
    """Serve usbredir guests of ``platform`` on ``listener``, one at a time, until stopped.

    Parameters
    ----------
    platform : UsbPlatform
        The device (open); ``bus_reset()``, if it has one, runs between two guests.
    listener : socket.socket
        Listening.
    check_device : callable
        Raises :class:`DeviceGone` once the device is gone.
    on_event : callable
        Gets one line per guest that came, left, or was turned away.
    speed : Speed
        The speed the guest is told the device runs at.
    """

    def __init__(self, platform: Any, listener: socket.socket, *,
                 check_device: Callable[[], None] = lambda: None,
                 on_event: Callable[[str], None] = lambda line: None,
                 speed: Speed = Speed.HIGH) -> None:
        self.platform = platform
        self.speed = speed
        self.listener = listener
        self.check_device = check_device
        self.on_event = on_event
        self.served = 0
        self.refused = 0
        #: The device is as a bus reset and enumeration leave it (opened: enumerated).
        self.as_reset = True
        self._serving = False
        self._free = threading.Condition()
        self._arrived: queue.Queue[tuple[socket.socket, str]] = queue.Queue()

    def _accept(self) -> None:
        """The listener's thread: the first guest goes to :meth:`run`, one that comes while a
        guest is served is turned away."""
        while True:
            try:
                connection, peer = self.listener.accept()
            except OSError:
                return  # the listener was closed: the service is ending
            name = peer if isinstance(peer, str) and peer else (
                f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "a Unix socket peer")
            with self._free:
                # A guest that comes back the moment it left finds the last one still being
                # closed: it waits that long rather than being turned away.
                busy = not self._free.wait_for(lambda: not self._serving, _CLOSING_S)
                if not busy:
                    self._serving = True
            if busy:
                self._refuse(connection, name)
            else:
                self._arrived.put((connection, name))

    def _refuse(self, connection: socket.socket, name: str) -> None:
        self.refused += 1
        self.on_event(f"refused usbredir guest {name}: another guest is being served")
        try:
            connection.settimeout(1)
            connection.sendall(Negotiated(CAPABILITIES).hello(
                f"busprobe {__version__}: busy, serving another guest"))
            connection.shutdown(socket.SHUT_WR)
            # Read what the guest sent (its hello) until it closes too, a second or 64 KiB at
            # most: closing with it unread would reset the connection and lose our hello.
            for _ in range(16):
                if not connection.recv(4096):
                    break
        except OSError:
            pass
        finally:
            connection.close()

    def run(self) -> str:
        """Serve until the device is gone (returns why); Ctrl-C/SIGTERM end it from outside."""
        threading.Thread(target=self._accept, name="usbredir-accept", daemon=True).start()
        try:
            while True:
                try:
                    connection, name = self._arrived.get(timeout=_IDLE_CHECK_S)
                except queue.Empty:
                    self.check_device()  # a dead simulator ends the service while idle too
                    continue
                self.on_event(f"usbredir guest {name} connected")
                # Counted when taken on, so a signal that ends the service while a guest that
                # already left is still being wound up cannot make the count race.
                self.served += 1
                with connection:
                    export = UsbredirExport(self.platform, connection,
                                            version=f"busprobe {__version__}", speed=self.speed,
                                            check_device=self.check_device,
                                            as_reset=self.as_reset)
                    try:
                        ended = export.serve()
                    except DeviceGone:
                        raise
                    except TransportError as exc:  # the device failed this guest: the next
                        ended, export.dropped = "closed", f"device error: {exc}"  # gets a reset
                with self._free:
                    self._serving = False
                    self._free.notify_all()
                if ended != "closed":
                    return ended
                why = f" (dropped: {export.dropped})" if export.dropped else ""
                self.on_event(f"usbredir guest {name} disconnected{why}")
                self.as_reset = export.as_reset
                if not self.as_reset:
                    # The next guest finds the device as a replug leaves it.
                    self.as_reset = self.platform.bus_reset()
        except DeviceGone as exc:
            return str(exc)


def serve_usbredir(selector: str, address: str, *,
                   on_ready: Callable[[str], None] = lambda line: None,
                   on_event: Callable[[str], None] = lambda line: None,
                   service: list[UsbredirService] | None = None) -> str:
    """Simulate ``selector`` and serve usbredir guests on ``address`` until the simulation dies
    (returns why) or the caller is interrupted (Ctrl-C, SIGTERM: the simulation is stopped).

    ``on_ready`` gets one line once the device is enumerated in the simulation and the socket
    listens (a harness starts its guest then); ``on_event`` one line per guest; ``service``, if
    given, receives the running service (its counts).
    """
    target = describe_target(selector, sysfs_root=None)
    exportable = EXPORTABLE.get(target.spec.kind) if target.simulated else None
    if exportable is None:
        raise InvalidRequest(f"{selector}: only simulated USB devices (sim:usb2, sim:usb3) can "
                             "be exported over usbredir")
    make_platform, speed = exportable
    platform = make_platform(target)
    with listen(address) as listener:  # a bad address is refused before minutes of simulation
        platform.open()
        try:
            running = UsbredirService(platform, listener,
                                      check_device=lambda: check_simulator(platform),
                                      on_event=on_event, speed=speed)
            if service is not None:
                service.append(running)
            on_ready(f"serving {selector} (pid {os.getpid()}) as usbredir on "
                     f"{describe_listener(listener)}")
            return running.run()
        finally:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread (Linux)
            except OSError:
                pass
            platform.close()


def check_simulator(platform: SimUsbPlatform) -> None:
    """:class:`DeviceGone` once the simulation behind ``platform`` has ended."""
    server = platform.server
    if server is None or server.proc.poll() is not None:
        raise DeviceGone(f"{platform.name}: the simulator exited")
