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
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ...protocol import pcie as proto
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
from .platform import PAGE, Bar, DmaBuffer, DmaPlatform, Interrupt, split_transfer
from .telemetry import decode_telemetry

# The platform protocols and split_transfer are re-exported: backends import them from here.
__all__ = ["Bar", "DmaBuffer", "Interrupt", "DmaPlatform", "PcieDmaDriver", "split_transfer",
           "decode_telemetry", "PAGE", "DIRECTIONS"]

log = logging.getLogger(__name__)

DIRECTIONS = ("write", "read", "loopback")
_MASK32 = 0xFFFF_FFFF


def _reg(name: str) -> int:
    return proto.csr(name)


@dataclass
class _Engine:
    """Host bookkeeping of one LitePCIe DMA engine (``writer`` or ``reader``)."""

    name: str
    pushed: int = 0  # descriptors queued since the table reset
    value_word0: int | None = None  # length/flags word last written to table_value
    consumed: int = 0  # descriptors the engine took from the table (from loop_status)
    pending: deque[tuple[int, int, int]] = field(default_factory=deque)  # (addr, len, flags)

    def reg(self, what: str) -> str:
        return f"pcie_dma0_{self.name}_{what}"


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
    """

    def __init__(self, platform: DmaPlatform, *, use_msi: bool = True,
                 timeout: Callable[[int], float] | None = None,
                 irq_slice: float = 0.01, poll_interval: float = 2e-6) -> None:
        self.platform = platform
        self.bar = platform.bar
        self.use_msi = use_msi and platform.msi is not None
        self.timeout = timeout or (lambda nbytes: 0.5 + nbytes / 20e6)  # >= 20 MB/s or abort
        self.irq_slice = irq_slice
        self.poll_interval = poll_interval
        self.pattern = Pattern.COUNTER
        self.writer = _Engine("writer")
        self.reader = _Engine("reader")
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
        return {"clock_hz": self.clock_hz,
                "mps": self.bar.read32(_reg("busprobe_max_payload_size")),
                "mrrs": self.bar.read32(_reg("busprobe_max_request_size")),
                "link_status": self.bar.read32(_reg("pcie_phy_phy_link_status"))}

    def reset(self) -> None:
        """Stop both engines, empty their tables, leave loopback, arm MSIs."""
        self.bar.write32_many([
            (_reg("pcie_dma0_loopback_enable"), 0),
            *self._stop_writes(self.writer), *self._stop_writes(self.reader),
            (_reg("pcie_msi_enable"), (1 << proto.MSI_READER) | (1 << proto.MSI_WRITER)),
            (_reg("pcie_msi_clear"), (1 << proto.MSI_READER) | (1 << proto.MSI_WRITER)),
        ])
        self._loopback = False

    def _stop_writes(self, engine: _Engine) -> list[tuple[int, int]]:
        engine.pushed = engine.consumed = 0
        engine.value_word0 = None
        engine.pending.clear()
        return [(_reg(engine.reg("enable")), 0), (_reg(engine.reg("table_loop_prog_n")), 0),
                (_reg(engine.reg("table_reset")), 1)]

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

    # -- descriptors -----------------------------------------------------------------------------

    def _queue(self, engine: _Engine, buf: DmaBuffer, length: int) -> int:
        """Queue the descriptors of one transfer; returns the engine's count when it is done.

        The last descriptor of a transfer raises an MSI, and so does every half table's worth.
        """
        descs = split_transfer(buf.bus_address, length)
        half = proto.DMA_TABLE_DEPTH // 2
        for i, (address, size) in enumerate(descs):
            sequence = engine.pushed + len(engine.pending)
            # An MSI at the end of the transfer, and every half table so a long transfer's
            # remaining descriptors are pushed before the table runs dry.
            irq = i == len(descs) - 1 or sequence % half == half - 1
            flags = proto.DESC_LAST_DISABLE | (0 if irq else proto.DESC_IRQ_DISABLE)
            engine.pending.append((address, size, flags))
        return engine.pushed + len(engine.pending)

    def _flush(self, engine: _Engine) -> None:
        """Push pending descriptors while the table has room (known from loop_status)."""
        room = proto.DMA_TABLE_DEPTH - (engine.pushed - engine.consumed)
        writes = []
        value, we = _reg(engine.reg("table_value")), _reg(engine.reg("table_we"))
        while engine.pending and room > 0:
            address, size, flags = engine.pending.popleft()
            # table_value keeps its words between descriptors: runs of equal-length descriptors
            # cost two MMIO writes each instead of three (less downstream link traffic).
            if engine.value_word0 != size | flags:
                engine.value_word0 = size | flags
                writes.append((value, size | flags))
            writes += [(value + 4, address & _MASK32), (we, address >> 32)]
            engine.pushed += 1
            room -= 1
        if writes:
            self.bar.write32_many(writes)

    def _poll(self, engine: _Engine) -> int:
        """Descriptors consumed since the table reset (loop_status: count << 16 | index)."""
        status = self.bar.read32(_reg(engine.reg("table_loop_status")))
        if status == _MASK32:
            raise DeviceGone("BAR0 reads all ones mid-transfer: the device dropped off the bus")
        seen = ((status >> 16) << 16) | (status & 0xFFFF)
        # loop_status is 32 bits in prog mode (index wraps into count); extend past 2**32.
        engine.consumed += (seen - engine.consumed) & _MASK32
        return engine.consumed

    def _checked(self) -> int:
        return self.bar.read32(_reg("busprobe_checked_bytes"))

    # -- the data path ---------------------------------------------------------------------------

    def _enter_mode(self, direction: str) -> None:
        if direction == "loopback" and not self._loopback:
            self._drain_writer_fifo()
            self.bar.write32(_reg("pcie_dma0_loopback_enable"), 1)
            self._loopback = True
        elif direction != "loopback" and self._loopback:
            self.bar.write32_many([*self._stop_writes(self.writer),
                                   (_reg("pcie_dma0_loopback_enable"), 0)])
            self._loopback = False
        if direction in ("write", "loopback"):
            self.bar.write32(_reg(self.writer.reg("enable")), proto.DMA_ENABLE)
        if direction in ("read", "loopback"):
            self.bar.write32(_reg(self.reader.reg("enable")), proto.DMA_ENABLE)

    def _drain_writer_fifo(self) -> None:
        """Keep the generator bytes that wait in the writer FIFO before loopback takes it over.

        The generator runs ahead of the descriptors into the writer's FIFO; switching to loopback
        would put them in front of the loopback data, and flushing would lose them. The writer
        writes them to a scratch buffer and the next ``write`` point hands them to its sink
        first, so the device stream and the host's copy stay in step.
        """
        # Loopback disconnects the generator from the writer, so the count below stays put.
        self.bar.write32_many([(_reg("pcie_dma0_loopback_enable"), 1),
                               (_reg(self.writer.reg("enable")), proto.DMA_ENABLE)])
        ahead = (self.bar.read32(_reg("busprobe_generated_bytes")) - self._written) & _MASK32
        if not 0 < ahead < (1 << 31):
            return
        buf = self._buffer("scratch", 0, ahead)
        done = self._queue(self.writer, buf, ahead)
        self._flush(self.writer)
        self._wait(lambda: self._poll(self.writer) >= done or None, ahead,
                   "draining the writer FIFO")
        self._carry += buf.read(0, ahead)
        self._written = (self._written + ahead) & _MASK32
        # The drain is housekeeping inside a point whose telemetry was just cleared: its
        # writes must not count as the point's traffic (device bytes, TLPs, timing).
        self.bar.write32(_reg("busprobe_telemetry_clear"), 1)

    def _wait(self, done: Callable[[], bool | None], nbytes: int, what: str) -> None:
        """Wait until ``done()`` is True; abort the DMA and raise on timeout.

        ``done()`` returns None while the engine still has descriptors to execute (an MSI will
        come: sleep on it, in slices so a merged or lost MSI costs one slice at most) and False
        while only data is still landing (poll).
        """
        deadline = self.platform.now() + self.timeout(nbytes)
        while (state := done()) is not True:
            left = deadline - self.platform.now()
            if left <= 0:
                self.abort()
                raise TransferTimeout(f"PCIe DMA timed out {what} ({nbytes} bytes in "
                                      f"{self.timeout(nbytes):.3g} s); DMA aborted")
            if state is False:
                # Data still landing (at most READ_TAGS x MRRS bytes): poll gently, every MMIO
                # read is a request on the link the data is using.
                self._pause(min(left, self.poll_interval))
            elif self.use_msi:
                if self.platform.msi.wait(min(left, self.irq_slice)):
                    self.bar.write32(_reg("pcie_msi_clear"),
                                     (1 << proto.MSI_READER) | (1 << proto.MSI_WRITER))

    def _pause(self, seconds: float) -> None:
        """Let ``seconds`` pass on the platform's clock (an MSI wait doubles as a sleep)."""
        if self.platform.msi is not None:
            self.platform.msi.wait(seconds)
        else:
            time.sleep(seconds)

    def abort(self) -> None:
        """Stop both engines and empty their tables; device and host streams are out of step
        until the next :meth:`set_pattern`."""
        self.reset()
        self._out_of_step = True

    def stream(self, direction: str, length: int, count: int, queue_depth: int,
               source: Source | None = None, sink: Sink | None = None) -> StreamResult:
        """Move ``count`` transfers of ``length`` bytes with ``queue_depth`` in flight."""
        if direction not in DIRECTIONS:
            raise InvalidRequest(f"direction {direction!r} is not one of {', '.join(DIRECTIONS)}")
        if self._out_of_step:
            raise InvalidRequest("device pattern out of step after an aborted transfer: "
                                 "restart the pattern first")
        split_transfer(0, length)  # length rules, before anything moves
        if queue_depth < 1 or count < 1:
            raise InvalidRequest("queue depth and transfer count must be at least 1")
        self._enter_mode(direction)
        queue_depth = min(queue_depth, count)
        outgoing = direction in ("read", "loopback")
        incoming = direction in ("write", "loopback")
        transfers: deque[_Transfer] = deque()
        carry, self._carry = (self._carry, b"") if direction == "write" else (b"", self._carry)

        def submit(index: int) -> None:
            slot = index % queue_depth
            t = _Transfer(index, self._buffer("in" if incoming else "out", slot, length), length)
            if outgoing:
                src = self._buffer("out", slot, length)
                src.write(0, source(length) if source else bytes(length))
                t.reader_done_at = self._queue(self.reader, src, length)
                if direction == "read":
                    self._read = (self._read + length) & _MASK32
                    t.reader_bytes_at = self._read
            if incoming:
                t.writer_done_at = self._queue(self.writer, t.buffer, length)
            transfers.append(t)

        def complete(t: _Transfer) -> bool | None:
            if outgoing:
                self._flush(self.reader)
            if incoming:
                self._flush(self.writer)
                return self._poll(self.writer) >= t.writer_done_at or None
            requested = self.reader.consumed >= t.reader_done_at  # known from an earlier poll
            if not requested and self._poll(self.reader) < t.reader_done_at:
                return None
            # The reader is done when it has *requested* the data; wait for it to be checked.
            return ((self._checked() - t.reader_bytes_at) & _MASK32) < (1 << 31)

        start = self.platform.now()
        for index in range(queue_depth):
            submit(index)
        self._flush(self.reader)
        self._flush(self.writer)
        moved = 0
        for index in range(count):
            t = transfers.popleft()
            self._wait(lambda t=t: complete(t), length * (1 + len(transfers)),
                       f"on {direction} transfer {index + 1}/{count}")
            if incoming and sink is not None:
                data = t.buffer.read(0, length)
                if carry:  # generator bytes kept from before a loopback come first
                    data, carry = (carry + data)[:length], (carry + data)[length:]
                sink(data)
            if direction == "write":
                self._written = (self._written + length) & _MASK32
            moved += length
            if index + queue_depth < count:
                submit(index + queue_depth)
                self._flush(self.reader)
                self._flush(self.writer)
        end = self.platform.now()
        if carry:  # the stream moved on by len(carry): keep it for the next write point
            self._carry = carry
        return StreamResult(direction, moved, count, start, end)

    # -- telemetry -------------------------------------------------------------------------------

    def read_counters(self) -> dict[str, int]:
        return {name: self.bar.read32(_reg(f"busprobe_{name}")) for name, _ in proto.TELEMETRY}

    def read_telemetry(self) -> Telemetry:
        raw: dict[str, object] = dict(self.read_counters())
        return decode_telemetry(raw, self.clock_hz, self._baseline.get("pattern_errors", 0))
