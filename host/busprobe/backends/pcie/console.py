"""The PCIe SoC's console: one command at a time, over a serial port or the simulated UART.

The firmware (``firmware/``) answers each line typed on its UART and prints
:data:`~busprobe.protocol.pcie_soc.PROMPT` when it waits for the next one. A :class:`Console` is
anything that can write bytes and read up to a marker: :class:`SerialConsole` is a tty (the
board's USB-UART, 115200 8N1, raw, through ``termios``: no extra package), the simulation's is
``busprobe.sim.pcie.backend.SimConsole``. :func:`run_command` and :func:`read_banner` are
written once over either.
"""

from __future__ import annotations

import os
import select
import termios
import time
import tty
from typing import Protocol

from ...protocol import pcie_soc as soc
from ...transport import DeviceGone, DeviceNotFound, PermissionDenied, TransferTimeout

__all__ = ["Console", "SerialConsole", "run_command", "read_banner", "COMMAND_TIMEOUT_S"]

PROMPT = soc.PROMPT.encode()
#: What a command may take on the console's clock before it counts as lost (a `dma` sweep
#: through a 1 MiB buffer is well under a second on a board; simulated seconds are slower).
COMMAND_TIMEOUT_S = 10.0
_BAUDS = {9600: termios.B9600, 19200: termios.B19200, 38400: termios.B38400,
          57600: termios.B57600, 115200: termios.B115200, 230400: termios.B230400}


class Console(Protocol):
    """Bytes to and from the firmware's UART.

    Attributes
    ----------
    command_timeout : float
        Seconds, on the console's clock, a command may take before it counts as lost.
    """

    command_timeout: float

    def write(self, data: bytes) -> None: ...

    def read_until(self, marker: bytes, timeout: float) -> tuple[bytes, bool]:
        """Everything up to and including ``marker`` and True, or after ``timeout`` seconds
        without it what came and False."""


class SerialConsole:
    """A tty in raw mode (8N1, no flow control) at ``baud``.

    Parameters
    ----------
    path : str
        The serial device (``/dev/ttyUSB0``).
    baud : int
        Line rate; the board's firmware uses :data:`~busprobe.protocol.pcie_soc.UART_BAUD`.
    """

    def __init__(self, path: str, baud: int = soc.UART_BAUD) -> None:
        if baud not in _BAUDS:
            raise ValueError(f"--baud {baud} is not one of {', '.join(map(str, _BAUDS))}")
        try:
            self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        except FileNotFoundError:
            raise DeviceNotFound(f"{path}: no such serial port") from None
        except PermissionError:
            raise PermissionDenied(f"{path}: permission denied (add yourself to the group "
                                   "owning it, usually dialout)") from None
        try:
            # TCSANOW, not setraw's default TCSAFLUSH: what the firmware printed before the
            # port was opened (its banner) stays readable instead of being discarded.
            tty.setraw(self.fd, termios.TCSANOW)
            attrs = termios.tcgetattr(self.fd)
            attrs[4] = attrs[5] = _BAUDS[baud]  # ispeed, ospeed
            attrs[2] &= ~(termios.CRTSCTS | termios.PARENB | termios.CSTOPB)
            attrs[2] |= termios.CLOCAL | termios.CREAD
            termios.tcsetattr(self.fd, termios.TCSANOW, attrs)
        except termios.error as exc:
            os.close(self.fd)
            raise DeviceNotFound(f"{path}: not a serial port ({exc.args[-1]})") from None
        self.path = path
        self.command_timeout = COMMAND_TIMEOUT_S
        self._pending = bytearray()

    def write(self, data: bytes) -> None:
        view = memoryview(bytes(data))
        while view:
            select.select([], [self.fd], [], 1.0)
            try:
                view = view[os.write(self.fd, view):]
            except BlockingIOError:
                continue
            except OSError as exc:
                raise DeviceGone(f"{self.path}: {exc.strerror}") from None

    def read_until(self, marker: bytes, timeout: float) -> tuple[bytes, bool]:
        deadline = time.monotonic() + timeout
        while (end := self._pending.find(marker)) < 0:
            left = deadline - time.monotonic()
            if left <= 0:
                data = bytes(self._pending)
                self._pending.clear()
                return data, False
            if select.select([self.fd], [], [], left)[0]:
                try:
                    chunk = os.read(self.fd, 4096)
                except BlockingIOError:
                    continue
                except OSError as exc:
                    raise DeviceGone(f"{self.path}: {exc.strerror}") from None
                if not chunk:
                    raise DeviceGone(f"{self.path}: the serial port closed")
                self._pending += chunk
        end += len(marker)
        data = bytes(self._pending[:end])
        del self._pending[:end]
        return data, True

    def close(self) -> None:
        os.close(self.fd)


def _text(data: bytes) -> str:
    return data.decode("ascii", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def read_banner(console: Console) -> str:
    """The firmware's first prompt and what came before it (its banner after a reset); on a
    console that was already up, an empty line brings the prompt back."""
    timeout = console.command_timeout
    data, found = console.read_until(PROMPT, timeout / 20)
    if not found:
        console.write(b"\r")
        more, found = console.read_until(PROMPT, timeout)
        data += more
        if found:
            # A banner that was only slow brings its own prompt before the empty line's.
            console.read_until(PROMPT, timeout / 20)
    if not found:
        raise TransferTimeout(f"the console printed no prompt within {timeout:g} s: is the "
                              "firmware running, and the baud rate right?")
    return _text(data[:-len(PROMPT)]).strip("\n")


def run_command(console: Console, line: str) -> str:
    """Type ``line``, return what the firmware answered (its echo and the next prompt left
    out)."""
    timeout = console.command_timeout
    if any(ord(c) < 0x20 or ord(c) > 0x7E for c in line):
        raise ValueError(f"console command {line!r} has characters a terminal would not send")
    console.write(line.encode() + b"\r")
    data, found = console.read_until(PROMPT, timeout)
    if not found:
        raise TransferTimeout(f"no answer to {line!r} within {timeout:g} s (got "
                              f"{_text(data)[-200:]!r})")
    text = _text(data[:-len(PROMPT)])
    echo, _, answer = text.partition("\n")
    return answer.rstrip("\n")
