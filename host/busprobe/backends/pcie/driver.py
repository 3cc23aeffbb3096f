"""The busprobe PCIe DMA driver: the one piece of host code that programs the device.

It talks to a :class:`Bar` (32-bit register reads/writes), :class:`DmaBuffer` s (host memory the
device reaches at a bus address) and optionally an :class:`Interrupt`. The VFIO backend provides
those from ``/dev/vfio`` and an mmap'd BAR; the simulated backend provides them over RPC from a
cocotb process holding the Verilator model, so the simulation exercises exactly this code.

Directions are named from the device's DMA engines (LitePCIe):

``write``     device -> host: the pattern generator feeds the DMA writer; the host checks every
              byte it finds in its buffers.
``read``      host -> device: the host fills its buffers from the pattern; the DMA reader reads
              them and the device's checker compares.
``loopback``  host -> device -> host: reader output goes straight to the writer; the host fills
              one set of buffers and checks another.

Queue depth = transfers (each with its own host buffer) in flight. Each transfer is cut into
descriptors that never cross a 4 KiB boundary (LitePCIe's splitter cuts only every MPS/MRRS from
the descriptor start and does not check, LitePCIe #97), and their lengths must be multiples of
the datapath width, checked here with a one-line :class:`InvalidRequest`.

A read that loses data on the link fails in the device (:mod:`.read_path`): the transfer waiting
on it raises :class:`ReadPathFailed` after the DMA is aborted and the read path reset, so no
throughput is ever taken from it. Every :meth:`PcieDmaDriver.reset` resets the read path too.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from ...protocol import pcie as proto
from ...protocol.names import PCIE_DIRECTIONS, Direction
from ...protocol.patterns import Pattern
from ...transport import (
    DeviceGone,
    InvalidRequest,
    Sink,
    Source,
    StreamResult,
    Telemetry,
    TransferTimeout,
)
from .descriptor_table import DescriptorTable
from .link_counters import LinkCounters
from .platform import PAGE, Bar, DmaBuffer, DmaPlatform, Interrupt, split_transfer
from .read_path import ReadPath, ReadPathFailed
from .telemetry import decode_telemetry

# The platform protocols and split_transfer are re-exported: backends import them from here.
__all__ = ["Bar", "DmaBuffer", "Interrupt", "DmaPlatform", "PcieDmaDriver", "split_transfer",
           "decode_telemetry", "PAGE", "DIRECTIONS", "ReadPathFailed"]

log = logging.getLogger(__name__)

DIRECTIONS = (*PCIE_DIRECTIONS, Direction.LOOPBACK)
_MASK32 = 0xFFFF_FFFF


def _reg(name: str) -> int:
    return proto.csr(name)


@dataclass
class _Transfer:
    index: int
    buffer: DmaBuffer
    length: int
    writer_done_at: int = 0  # writer descriptor count that completes this transfer
    reader_bytes_at: int = 0  # checker byte count that completes this transfer (read only)
    reader_done_at: int = 0


class PcieDmaDriver:
    """Programs the busprobe PCIe DMA core through BAR0 (see :mod:`busprobe.protocol.pcie`).

    Parameters
    ----------
    platform : DmaPlatform
        Registers, buffers, interrupts and clock.
    use_msi : bool
        Wait for MSIs (one per transfer) when the platform has them; otherwise poll.
    timeout : callable
        ``(bytes) -> seconds`` allowed for that many bytes to move before the DMA is aborted
        and :class:`TransferTimeout` raised (on the platform's clock).
    irq_slice : float
        Longest single sleep on the MSI before the registers are looked at again.
    poll_interval : float
        Pause between register polls while read data is still landing.
    completion_timeout : float or None
        Seconds a DMA read may wait for its completions before the device fails it (set at
        :meth:`probe`); None keeps the device's own (16 ms on the board).
    """

    def __init__(self, platform: DmaPlatform, *, use_msi: bool = True,
                 timeout: Callable[[int], float] | None = None,
                 irq_slice: float = 0.01, poll_interval: float = 2e-6,
                 completion_timeout: float | None = None) -> None:
        self.platform = platform
        self.bar = platform.bar
        self.use_msi = use_msi and platform.msi is not None
        self.timeout = timeout or (lambda nbytes: 0.5 + nbytes / 20e6)  # >= 20 MB/s or abort
        self.irq_slice = irq_slice
        self.poll_interval = poll_interval
        self.completion_timeout = completion_timeout
        self.read_path = ReadPath(self.bar)
        self.link = LinkCounters(self.bar)
        self.pattern = Pattern.COUNTER
        self.writer = DescriptorTable("writer", self.bar)
        self.reader = DescriptorTable("reader", self.bar)
        self.clock_hz = proto.CLOCK_HZ
        self._buffers: dict[tuple[str, int], DmaBuffer] = {}
        # Stream positions since the last pattern restart, mod 2**32 like the device counters.
        self._written = 0  # write-direction bytes handed to the host
        self._read = 0  # bytes queued to the reader outside loopback (checker's expectation)
        self._carry = b""  # generator bytes drained from the writer FIFO before a loopback
        self._loopback = False
        self._out_of_step = False
        self._baseline: dict[str, int] = {}

    # -- identity and set-up --------------------------------------------------------------------

    def probe(self) -> dict[str, int]:
        """Check the bitstream speaks this protocol; return identity and link registers."""
        magic = self.bar.read32(_reg("busprobe_magic"))
        if magic == _MASK32:
            raise DeviceGone("BAR0 reads all ones: the device dropped off the bus (link down?)")
        if magic != proto.MAGIC:
            raise InvalidRequest(f"not a busprobe PCIe bitstream (magic {magic:#010x}, expected "
                                 f"{proto.MAGIC:#010x})")
        version = self.bar.read32(_reg("busprobe_version"))
        if version != proto.PROTOCOL_VERSION:
            raise InvalidRequest(f"bitstream protocol version {version}, this busprobe speaks "
                                 f"{proto.PROTOCOL_VERSION}: rebuild one of them")
        self.clock_hz = self.bar.read32(_reg("busprobe_clock_hz")) or proto.CLOCK_HZ
        if self.completion_timeout is not None:
            self.read_path.set_completion_timeout(self.completion_timeout, self.clock_hz)
        return {"clock_hz": self.clock_hz,
                "mps": self.bar.read32(_reg("busprobe_max_payload_size")),
                "mrrs": self.bar.read32(_reg("busprobe_max_request_size")),
                "link_status": self.bar.read32(_reg("pcie_phy_phy_link_status"))}

    def reset(self) -> None:
        """Stop both engines, empty their tables, reset the read path, leave loopback, arm
        MSIs."""
        self.bar.write32_many([
            (_reg("pcie_dma0_loopback_enable"), 0),
            *self.writer.stop_writes(), *self.reader.stop_writes(),
            *self.read_path.reset_writes(),
            (_reg("pcie_msi_enable"), (1 << proto.MSI_READER) | (1 << proto.MSI_WRITER)),
            (_reg("pcie_msi_clear"), (1 << proto.MSI_READER) | (1 << proto.MSI_WRITER)),
        ])
        self._loopback = False
        self.read_path.wait_reset()

    def set_pattern(self, pattern: Pattern) -> None:
        """Restart generator and checker at ``pattern`` (writer disabled while writing it)."""
        self.pattern = Pattern(pattern)
        self.reset()
        self.bar.write32(_reg("busprobe_pattern"), int(self.pattern))
        self._written = self._read = 0
        self._carry = b""
        self._out_of_step = False
        self._baseline = {}

    def clear_telemetry(self) -> None:
        self.bar.write32(_reg("busprobe_telemetry_clear"), 1)
        self._baseline = {"pattern_errors": self.bar.read32(_reg("busprobe_pattern_errors"))}
        self.link.baseline()

    # -- buffers ---------------------------------------------------------------------------------

    def _buffer(self, role: str, index: int, length: int) -> DmaBuffer:
        key = (role, index)
        buf = self._buffers.get(key)
        if buf is None or buf.size < length:
            if buf is not None:
                self.platform.free(buf)
            size = -(-length // PAGE) * PAGE
            buf = self._buffers[key] = self.platform.alloc(size)
        return buf

    def free_buffers(self) -> None:
        for buf in self._buffers.values():
            self.platform.free(buf)
        self._buffers.clear()

    def _checked(self) -> int:
        return self.bar.read32(_reg("busprobe_checked_bytes"))

    # -- the data path ---------------------------------------------------------------------------

    def _enter_mode(self, direction: str) -> None:
        if direction == Direction.LOOPBACK and not self._loopback:
            self._drain_writer_fifo()
            self.bar.write32(_reg("pcie_dma0_loopback_enable"), 1)
            self._loopback = True
        elif direction != Direction.LOOPBACK and self._loopback:
            self.bar.write32_many([*self.writer.stop_writes(),
                                   (_reg("pcie_dma0_loopback_enable"), 0)])
            self._loopback = False
        if direction in (Direction.WRITE, Direction.LOOPBACK):
            self.bar.write32(self.writer.reg("enable"), proto.DMA_ENABLE)
        if direction in (Direction.READ, Direction.LOOPBACK):
            self.bar.write32(self.reader.reg("enable"), proto.DMA_ENABLE)

    def _drain_writer_fifo(self) -> None:
        """Keep the generator bytes that wait in the writer FIFO before loopback takes it over.

        The generator runs ahead of the descriptors into the writer's FIFO; switching to loopback
        would put them in front of the loopback data, and flushing would lose them. The writer
        writes them to a scratch buffer and the next ``write`` point hands them to its sink
        first, so the device stream and the host's copy stay in step.
        """
        # Loopback disconnects the generator from the writer, so the count below stays put.
        self.bar.write32_many([(_reg("pcie_dma0_loopback_enable"), 1),
                               (self.writer.reg("enable"), proto.DMA_ENABLE)])
        ahead = (self.bar.read32(_reg("busprobe_generated_bytes")) - self._written) & _MASK32
        if not 0 < ahead < (1 << 31):
            return
        buf = self._buffer("scratch", 0, ahead)
        done = self.writer.queue(buf, ahead)
        self.writer.flush()
        self._wait(lambda: self.writer.poll() >= done or None, ahead,
                   "draining the writer FIFO")
        self._carry += buf.read(0, ahead)
        self._written = (self._written + ahead) & _MASK32
        # The drain is housekeeping inside a point whose telemetry was just cleared: its
        # writes must not count as the point's traffic (device bytes, TLPs, timing).
        self.bar.write32(_reg("busprobe_telemetry_clear"), 1)

    def _wait(self, done: Callable[[], bool | None], nbytes: int, what: str,
              reads: bool = False) -> None:
        """Wait until ``done()`` is True; abort the DMA and raise on timeout, or when ``reads``
        are part of it and the device's read path failed (it raises the reader MSI then).

        ``done()`` returns None while the engine still has descriptors to execute (an MSI will
        come: sleep on it, in slices so a merged or lost MSI costs one slice at most) and False
        while only data is still landing (poll).
        """
        deadline = self.platform.now() + self.timeout(nbytes)
        while (state := done()) is not True:
            left = deadline - self.platform.now()
            if left <= 0:
                self._raise_if_read_failed(reads, what)
                self.abort()
                raise TransferTimeout(f"PCIe DMA timed out {what} ({nbytes} bytes in "
                                      f"{self.timeout(nbytes):.3g} s); DMA aborted")
            if state is False:
                # Data still landing (at most READ_TAGS x MRRS bytes): poll gently, every MMIO
                # read is a request on the link the data is using.
                interrupted = self._pause(min(left, self.poll_interval))
            elif self.use_msi:
                interrupted = self.platform.msi.wait(min(left, self.irq_slice))
                if interrupted:
                    self.bar.write32(_reg("pcie_msi_clear"),
                                     (1 << proto.MSI_READER) | (1 << proto.MSI_WRITER))
            else:
                interrupted = True  # no MSI to say so: look every time
            if interrupted:
                self._raise_if_read_failed(reads, what)

    def _raise_if_read_failed(self, reads: bool, what: str) -> None:
        if reads and self.read_path.failed():
            failure = self.read_path.failure(what)  # the counts, before the reset
            self.abort()
            raise failure

    def _pause(self, seconds: float) -> bool:
        """Let ``seconds`` pass on the platform's clock (an MSI wait doubles as a sleep);
        True if an MSI came (or there is no MSI to tell)."""
        if self.platform.msi is not None:
            return self.platform.msi.wait(seconds)
        time.sleep(seconds)
        return True

    def abort(self) -> None:
        """Stop both engines and empty their tables; device and host streams are out of step
        until the next :meth:`set_pattern`."""
        self.reset()
        self._out_of_step = True

    def stream(self, direction: str, length: int, count: int, queue_depth: int,
               source: Source | None = None, sink: Sink | None = None) -> StreamResult:
        """Move ``count`` transfers of ``length`` bytes with ``queue_depth`` in flight."""
        if direction not in DIRECTIONS:
            raise InvalidRequest(f"direction '{direction}' is not one of {', '.join(DIRECTIONS)}")
        if self._out_of_step:
            raise InvalidRequest("device pattern out of step after an aborted transfer: "
                                 "restart the pattern first")
        split_transfer(0, length)  # length rules, before anything moves
        if queue_depth < 1 or count < 1:
            raise InvalidRequest("queue depth and transfer count must be at least 1")
        self._enter_mode(direction)
        queue_depth = min(queue_depth, count)
        outgoing = direction in (Direction.READ, Direction.LOOPBACK)
        incoming = direction in (Direction.WRITE, Direction.LOOPBACK)
        transfers: deque[_Transfer] = deque()
        carry, self._carry = ((self._carry, b"") if direction == Direction.WRITE
                              else (b"", self._carry))

        def submit(index: int) -> None:
            slot = index % queue_depth
            t = _Transfer(index, self._buffer("in" if incoming else "out", slot, length), length)
            if outgoing:
                src = self._buffer("out", slot, length)
                src.write(0, source(length) if source else bytes(length))
                t.reader_done_at = self.reader.queue(src, length)
                if direction == Direction.READ:
                    self._read = (self._read + length) & _MASK32
                    t.reader_bytes_at = self._read
            if incoming:
                t.writer_done_at = self.writer.queue(t.buffer, length)
            transfers.append(t)

        def complete(t: _Transfer) -> bool | None:
            if outgoing:
                self.reader.flush()
            if incoming:
                self.writer.flush()
                return self.writer.poll() >= t.writer_done_at or None
            requested = self.reader.consumed >= t.reader_done_at  # known from an earlier poll
            if not requested and self.reader.poll() < t.reader_done_at:
                return None
            # The reader is done when it has *requested* the data; wait for it to be checked.
            return ((self._checked() - t.reader_bytes_at) & _MASK32) < (1 << 31)

        start = self.platform.now()
        for index in range(queue_depth):
            submit(index)
        self.reader.flush()
        self.writer.flush()
        moved = 0
        for index in range(count):
            t = transfers.popleft()
            self._wait(lambda t=t: complete(t), length * (1 + len(transfers)),
                       f"on {direction} transfer {index + 1}/{count}", reads=outgoing)
            if incoming and sink is not None:
                data = t.buffer.read(0, length)
                if carry:  # generator bytes kept from before a loopback come first
                    data, carry = (carry + data)[:length], (carry + data)[length:]
                sink(data)
            if direction == Direction.WRITE:
                self._written = (self._written + length) & _MASK32
            moved += length
            if index + queue_depth < count:
                submit(index + queue_depth)
                self.reader.flush()
                self.writer.flush()
        end = self.platform.now()
        if carry:  # the stream moved on by len(carry): keep it for the next write point
            self._carry = carry
        return StreamResult(direction, moved, count, start, end)

    # -- telemetry -------------------------------------------------------------------------------

    def read_counters(self) -> dict[str, int]:
        return {name: self.bar.read32(_reg(f"busprobe_{name}")) for name, _ in proto.TELEMETRY}

    def read_telemetry(self) -> Telemetry:
        raw: dict[str, object] = dict(self.read_counters())
        raw["link"] = self.link.read()  # the soft endpoint's state and counters, or absent
        return decode_telemetry(raw, self.clock_hz, self._baseline.get("pattern_errors", 0))
