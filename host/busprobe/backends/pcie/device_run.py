"""The device-run DMA: the SoC's firmware moves the data, the host only asks and checks.

The host tool allocates and pins one buffer, publishes it in the firmware mailbox
(:data:`busprobe.protocol.pcie_soc.FIRMWARE_CSRS`) and asks for runs of ``count`` x ``length``
bytes. The firmware queues every descriptor itself, with no host software in the loop per
transfer, and the core's telemetry times the run (first TLP to last): what the link and the
root complex allow, with the host's driver out of the picture. Set beside the host-run figure of
the same point it tells a driver-limited host from a chipset-limited one.

Every byte is still checked: a run restarts the pattern on the device, so before a ``read`` the
buffer holds the pattern from its start, and after a ``write`` the host checks the buffer.
"""

from __future__ import annotations

import time

from ...protocol import pcie as proto
from ...protocol import pcie_soc as soc
from ...protocol.names import Direction
from ...protocol.patterns import Pattern, PatternStream
from ...transport import DeviceRunFailed, DeviceRunResult, InvalidRequest, TransferTimeout
from .platform import PAGE, DmaBuffer, DmaPlatform

__all__ = ["DeviceRun", "DeviceRunResult", "DeviceRunFailed", "DIRECTIONS"]

#: What the firmware runs (named as the host driver's directions); loopback is host-run only.
DIRECTIONS = {"write": soc.Direction.WRITE, "read": soc.Direction.READ}
_STATUS_TEXT = {
    soc.Status.NO_BUFFER: "the run does not fit the published host buffer",
    soc.Status.BAD_REQUEST: "the firmware refused the request",
    soc.Status.TIMEOUT: "the engine did not finish (link down? bus mastering off?)",
    soc.Status.READ_FAILED: "a read failed on the link (the core's read path; see telemetry)",
}


class DeviceRun:
    """The mailbox, seen from the host.

    Parameters
    ----------
    platform : DmaPlatform
        The open device.
    clock_hz : int
        The core clock (``busprobe_clock_hz``).
    """

    def __init__(self, platform: DmaPlatform, clock_hz: int) -> None:
        self.platform = platform
        self.bar = platform.bar
        self.clock_hz = clock_hz
        self.buffer: DmaBuffer | None = None

    def _reg(self, name: str) -> int:
        return proto.csr(f"firmware_{name}")

    def available(self, boot_timeout: float = 1e-3) -> bool:
        """The SoC runs firmware that speaks this mailbox: its magic appears within
        ``boot_timeout`` seconds (a board's firmware is up long before the host enumerates; a
        simulation opens the device microseconds after reset, while the CPU still boots)."""
        deadline = self.platform.now() + boot_timeout
        while self.bar.read32(self._reg("magic")) != soc.FIRMWARE_MAGIC:
            left = deadline - self.platform.now()
            if left <= 0:
                return False
            if self.platform.msi is not None:
                self.platform.msi.wait(min(left, 20e-6))  # lets the clock run
            else:
                time.sleep(min(left, 1e-3))
        return self.bar.read32(self._reg("version")) == soc.FIRMWARE_VERSION

    def publish(self, size: int) -> DmaBuffer:
        """Allocate (and pin) a buffer of ``size`` bytes, fill it with the counter pattern from
        its start (what the console's ``dma read`` checks) and tell the firmware."""
        size = -(-size // PAGE) * PAGE
        if self.buffer is None or self.buffer.size < size:
            if self.buffer is not None:
                self.platform.free(self.buffer)
            self.buffer = self.platform.alloc(size)
        self.buffer.write(0, PatternStream(Pattern.COUNTER).take(self.buffer.size))
        self.bar.write32_many([(self._reg("buffer"), self.buffer.bus_address),
                               (self._reg("buffer_size"), self.buffer.size)])
        return self.buffer

    def withdraw(self) -> None:
        """Tell the firmware the buffer is gone, and free it."""
        self.bar.write32_many([(self._reg("buffer"), 0), (self._reg("buffer_size"), 0)])
        if self.buffer is not None:
            self.platform.free(self.buffer)
            self.buffer = None

    def run(self, direction: str, length: int, count: int, pattern: Pattern) -> DeviceRunResult:
        """Ask the firmware for ``count`` transfers of ``length`` bytes, wait, check."""
        if direction not in DIRECTIONS:
            raise InvalidRequest(f"the device runs only {' and '.join(DIRECTIONS)}, not "
                                 f"'{direction}'")
        buf = self.buffer
        total = length * count
        if buf is None or total > buf.size:
            raise InvalidRequest(f"a device-run of {total} bytes needs a published buffer of "
                                 f"at least that size")
        stream = PatternStream(Pattern(pattern))
        if direction == Direction.READ:
            buf.write(0, stream.take(total))
        sequence = ((self.bar.read32(self._reg("command")) >> 8) + 1) & 0xFF_FFFF
        firmware_bit = 1 << soc.MSI_FIRMWARE
        enabled = self.bar.read32(proto.csr("pcie_msi_enable"))
        self.bar.write32_many([
            (proto.csr("pcie_msi_enable"), enabled | firmware_bit),
            (self._reg("direction"), int(DIRECTIONS[direction])),
            (self._reg("length"), length), (self._reg("count"), count),
            (self._reg("pattern"), int(pattern)),
            (self._reg("command"), sequence << 8 | soc.Command.DMA),
        ])
        status = self._wait(sequence, total)
        if status != soc.Status.DONE:
            raise DeviceRunFailed(f"device-run {direction} {count} x {length} B: "
                                  f"{_STATUS_TEXT.get(status, f'status {status}')}")
        values = {name: self.bar.read32(self._reg(name))
                  for name in ("bytes", "span_cycles", "total_cycles", "errors")}
        errors = values["errors"]
        if direction == Direction.WRITE:
            errors += stream.check(buf.read(0, total)).errors
        return DeviceRunResult(direction, values["bytes"], values["span_cycles"] / self.clock_hz,
                               values["total_cycles"] / self.clock_hz, errors)

    def _wait(self, sequence: int, total: int) -> int:
        """The finished command's status, waiting on the firmware's MSI (polling without one);
        the deadline allows 1 MB/s."""
        deadline = self.platform.now() + 0.01 + total / 1e6
        while True:
            status = self.bar.read32(self._reg("status"))
            if status >> 8 == sequence:
                self.bar.write32(proto.csr("pcie_msi_clear"), 1 << soc.MSI_FIRMWARE)
                return status & 0xFF
            left = deadline - self.platform.now()
            if left <= 0:
                raise TransferTimeout(f"the firmware did not finish a device-run of {total} "
                                      "bytes: is it running?")
            if self.platform.msi is not None:
                self.platform.msi.wait(min(left, 0.01))
