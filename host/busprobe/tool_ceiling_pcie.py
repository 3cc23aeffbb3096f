"""The VFIO path's own ceiling: the PCIe driver against a DMA engine that costs nothing.

:func:`vfio_run` times :meth:`~.backends.pcie.driver.PcieDmaDriver.stream` with the sweep's
pattern source and checker over :class:`InstantDevice`, a :class:`~.backends.pcie.platform.
DmaPlatform` whose engines take every descriptor the moment it is queued: its registers live in
an anonymous mapping read and written through a ``memoryview`` of 32-bit words, as the VFIO
BAR's are (``backends/pcie/vfio.py``), its buffers are anonymous mappings, its MSI is always
there, and a write transfer's data is copied into its buffer (a memory copy standing for the
device's DMA) when its descriptor is queued. What it includes and leaves out: see
:mod:`busprobe.tool_ceiling`.
"""

from __future__ import annotations

import mmap
import time
from collections.abc import Mapping
from typing import Any

from .backends.pcie.driver import PcieDmaDriver
from .protocol import pcie as proto
from .protocol.names import Direction
from .protocol.patterns import Pattern, PatternStream
from .transport import BusDescription

__all__ = ["InstantDevice", "vfio_run"]

_MASK32 = 0xFFFF_FFFF


class _Buffer:
    def __init__(self, size: int, bus_address: int) -> None:
        self.size, self.bus_address = size, bus_address
        self._map = mmap.mmap(-1, size)

    def read(self, offset: int, length: int) -> bytes:
        return self._map[offset:offset + length]

    def write(self, offset: int, data: bytes) -> None:
        self._map[offset:offset + len(data)] = data


class _Msi:
    def wait(self, timeout: float) -> bool:
        return True


class InstantDevice:
    """A busprobe PCIe device whose DMA completes as it is queued (see module)."""

    name = "instant"

    def __init__(self, written: bytes = b"") -> None:
        self._map = mmap.mmap(-1, proto.BAR0_SIZE)
        self._words = memoryview(self._map).cast("I")
        self.bar = self
        self.msi = _Msi()
        self._next_address = 0x1000_0000
        self._buffers: dict[int, _Buffer] = {}
        # The device's write data, in order: each writer descriptor takes the next bytes.
        self._written, self._write_at = written, 0
        self._value: dict[str, int] = {}
        names = {"writer": "pcie_dma0_writer_", "reader": "pcie_dma0_reader_"}
        self._we = {proto.csr(f"{prefix}table_we"): engine for engine, prefix in names.items()}
        self._status = {proto.csr(f"{prefix}table_loop_status"): engine
                        for engine, prefix in names.items()}
        self._pushed = dict.fromkeys(names, 0)
        self._checked = proto.csr("busprobe_checked_bytes")
        self._length_word = {proto.csr(f"{prefix}table_value"): engine
                             for engine, prefix in names.items()}
        self._address_word = {offset + 4: engine for offset, engine in self._length_word.items()}
        self._read_bytes = 0

    # -- the BAR ------------------------------------------------------------------------------
    def read32(self, offset: int) -> int:
        engine = self._status.get(offset)
        if engine is not None:
            return self._pushed[engine] & _MASK32
        if offset == self._checked:
            return self._read_bytes & _MASK32
        return self._words[offset >> 2]

    def write32(self, offset: int, value: int) -> None:
        self._words[offset >> 2] = value & _MASK32
        engine = self._we.get(offset)
        if engine is None:
            return
        self._pushed[engine] += 1
        length = self._words[self._length_offset(engine) >> 2] & proto.DESC_LENGTH_MASK
        address = self._words[(self._length_offset(engine) + 4) >> 2] | (value << 32)
        if engine == "reader":
            self._read_bytes += length
            return
        buffer = self._buffer_at(address)
        buffer.write(address - buffer.bus_address,
                     self._written[self._write_at:self._write_at + length])
        self._write_at += length

    def write32_many(self, writes: list[tuple[int, int]]) -> None:
        for offset, value in writes:
            self.write32(offset, value)

    def _length_offset(self, engine: str) -> int:
        return next(offset for offset, name in self._length_word.items() if name == engine)

    def _buffer_at(self, address: int) -> _Buffer:
        for base, buffer in self._buffers.items():
            if base <= address < base + buffer.size:
                return buffer
        raise ValueError(f"no buffer at {address:#x}")

    # -- the platform -------------------------------------------------------------------------
    def alloc(self, size: int) -> _Buffer:
        buffer = _Buffer(size, self._next_address)
        self._buffers[self._next_address] = buffer
        self._next_address += -(-size // 0x1000) * 0x1000 + 0x1000
        return buffer

    def free(self, buffer: _Buffer) -> None:
        self._buffers.pop(buffer.bus_address, None)

    def now(self) -> float:
        return time.perf_counter()

    def bus(self, identity: Mapping[str, int]) -> BusDescription:
        return BusDescription(kind="pcie", speed="gen2", width=1)

    def configure(self, **settings: Any) -> None:
        pass

    def topology(self, bus: BusDescription) -> list[dict[str, Any]]:
        return []

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass


def vfio_run(direction: str, length: int, queue_depth: int, count: int) -> float:
    """Seconds :meth:`PcieDmaDriver.stream` takes for ``count`` transfers on an
    :class:`InstantDevice`, with the sweep's pattern generation (read) or check (write)."""
    written = PatternStream(Pattern.COUNTER).take(count * length) if direction == Direction.WRITE \
        else b""
    device = InstantDevice(written)
    driver = PcieDmaDriver(device, timeout=lambda nbytes: 10.0)  # type: ignore[arg-type]
    host = PatternStream(Pattern.COUNTER)
    errors = 0

    def sink(data: bytes) -> None:
        nonlocal errors
        errors += host.check(data).errors

    result = driver.stream(direction, length, count, queue_depth, source=host.take, sink=sink)
    if errors:
        raise RuntimeError(f"the instant device's data did not check: {errors} words")
    return result.end - result.start
