"""A device plugged into a running guest: a usbredir connection QEMU gets only when told.

The null disk (``sim:usb2?design=storage``) has the probe device's VID:PID and serial, so while
the probe is exported to a guest the disk must not be: ``usb:1209:0001#BP2-0001`` would name
either. The USB pass plugs the disk in after the probe's exporter is gone (its unplug step).
QEMU's ``usb-redir`` sits on a socket chardev that reconnects every second (``reconnect=1``) to a
port of this process that is bound but not listening, so each attempt is refused and the guest
sees no device; :meth:`LatePlug.plug` starts listening and relays the one connection QEMU then
makes to the exporter's port, byte for byte in both directions.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from .exporter import Exporter

__all__ = ["LatePlug", "LateDisk", "write_guest_env"]


class LatePlug:
    """A port QEMU connects to once :meth:`plug` is called.

    Parameters
    ----------
    name : str
        The QEMU chardev id.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))  # not listening: QEMU's connects are refused
        self.port = self._server.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = [self._server]

    def qemu_args(self, bus: str) -> list[str]:
        """QEMU arguments attaching the late device to USB bus ``bus``."""
        return ["-chardev", f"socket,id={self.name},host=127.0.0.1,port={self.port},reconnect=1",
                "-device", f"usb-redir,chardev={self.name},bus={bus}"]

    def plug(self, target_port: int) -> None:
        """Accept QEMU's next connection and relay it to 127.0.0.1:``target_port``."""
        self._server.listen(1)
        thread = threading.Thread(target=self._accept, args=(target_port,), daemon=True,
                                  name=f"late-plug-{self.name}")
        thread.start()
        self._threads.append(thread)

    def _accept(self, target_port: int) -> None:
        try:
            guest, _ = self._server.accept()
            device = socket.create_connection(("127.0.0.1", target_port))
        except OSError:
            return  # closed before QEMU came, or the exporter is gone: the guest sees no disk
        self._sockets += [guest, device]
        for source, sink in ((guest, device), (device, guest)):
            relay = threading.Thread(target=self._relay, args=(source, sink), daemon=True)
            relay.start()
            self._threads.append(relay)

    @staticmethod
    def _relay(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(1 << 16):
                sink.sendall(data)
        except OSError:
            pass
        finally:  # one side gone: the other learns it as the end of its stream
            for sock in (sink, source):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()


class LateDisk:
    """A simulated device started and plugged in when the guest asks for it, and stopped when
    the guest says it is done (an idle simulator would share the cores with the checks around
    it), its wall time between the two kept.

    Attributes
    ----------
    exporter : Exporter or None
        Its ``busprobe sim serve``, once plugged in.
    seconds : float or None
        Wall seconds from the guest's ask to its done.

    Parameters
    ----------
    out : Path
        The pass's directory (the exporter's log goes there).
    selector : str
        The simulated device.
    name : str
        The QEMU chardev id; the exporter's log is ``exporter-<mark>.log``.
    mark : str
        The guest's marker prefix: ``<mark>-plug`` asks for it, ``<mark>-done`` ends it.
    """

    def __init__(self, out: Path, selector: str, name: str, mark: str) -> None:
        self._out, self._selector, self._name, self._mark = out, selector, name, mark
        self._plug = LatePlug(name)
        self._times: list[float] = []
        self.exporter: Exporter | None = None

    def qemu_args(self, bus: str) -> list[str]:
        return self._plug.qemu_args(bus)

    def on_mark(self, line: str) -> None:
        """Start and plug it at ``<mark>-plug``; stop it at ``<mark>-done``."""
        if line == f"{self._mark}-plug" and self.exporter is None:
            self._times.append(time.monotonic())
            self.exporter = Exporter(self._out / f"exporter-{self._mark}.log",
                                     selector=self._selector, name=self._name)
            assert self.exporter.port is not None
            self._plug.plug(self.exporter.port)
        elif line == f"{self._mark}-done" and self.exporter is not None:
            self._times.append(time.monotonic())
            self.exporter.stop()

    @property
    def seconds(self) -> float | None:
        return self._times[1] - self._times[0] if len(self._times) == 2 else None

    @property
    def log_path(self) -> Path:
        return self._out / f"exporter-{self._mark}.log"

    def close(self) -> int | None:
        """Stop its exporter (if started) and close the plug: the exporter's exit status."""
        status = self.exporter.stop() if self.exporter is not None else None
        self._plug.close()
        return status


def write_guest_env(out: Path, settings: dict[str, str]) -> None:
    """The guest's settings, ``guest.env`` in ``out``, which its checks source."""
    (out / "guest.env").write_text("".join(f"{key}='{value}'\n"
                                           for key, value in settings.items()))
