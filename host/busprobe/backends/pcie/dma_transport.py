"""The PCIe :class:`~busprobe.transport.Transport`, shared by the VFIO and simulated backends.

Both backends only supply a :class:`~busprobe.backends.pcie.driver.DmaPlatform` (registers,
buffers, MSI, clock) and a :class:`~busprobe.transport.BusDescription`; everything the sweep
sees (validation, patterns, streaming, telemetry) is :class:`PcieDmaDriver` underneath.
"""

from __future__ import annotations

import abc
from typing import Any

from ...protocol import pcie as proto
from ...protocol.patterns import Pattern
from ...transport import (
    DeviceGone,
    InvalidRequest,
    Sink,
    Source,
    StreamResult,
    Telemetry,
    Transport,
)
from .driver import DIRECTIONS, DmaPlatform, PcieDmaDriver, split_transfer

__all__ = ["PcieDmaTransport"]


class PcieDmaTransport(Transport):
    """A busprobe PCIe device behind some :class:`DmaPlatform`.

    Subclasses implement :meth:`_open_platform`, :meth:`_close_platform` and :attr:`bus`, and
    may set :attr:`driver_options` (timeouts, MSI slice) for their clock.
    """

    directions = DIRECTIONS
    #: Largest transfer: one buffer per transfer in flight, the descriptor length field's limit.
    max_length = proto.DESC_MAX_LENGTH

    def __init__(self, selector: str) -> None:
        self.selector = selector
        self.driver: PcieDmaDriver | None = None
        self.driver_options: dict[str, Any] = {}
        self.identity: dict[str, int] = {}

    @abc.abstractmethod
    def _open_platform(self) -> DmaPlatform: ...

    @abc.abstractmethod
    def _close_platform(self) -> None: ...

    def open(self) -> None:
        platform = self._open_platform()
        try:
            self.driver = PcieDmaDriver(platform, **self.driver_options)
            self.identity = self.driver.probe()
            self.driver.set_pattern(Pattern.COUNTER)
        except BaseException:
            self.driver = None
            self._close_platform()
            raise

    def close(self) -> None:
        """Stop the DMA and release everything; also undoes :meth:`configure` when the
        transport was never opened (``_close_platform`` must be idempotent)."""
        try:
            if self.driver is not None:
                self.driver.reset()
                self.driver.free_buffers()
        except DeviceGone:  # nothing left to stop or free
            pass
        finally:
            self.driver = None
            self._close_platform()

    def _driver(self) -> PcieDmaDriver:
        if self.driver is None:
            raise InvalidRequest(f"{self.selector}: transport is not open")
        return self.driver

    def validate(self, direction: str, length: int, queue_depth: int) -> None:
        super().validate(direction, length, queue_depth)
        if length > self.max_length:
            raise InvalidRequest(f"PCIe DMA length {length} exceeds {self.max_length} bytes "
                                 "(24-bit descriptor length)")
        split_transfer(0, length)

    def now(self) -> float:
        return self._driver().platform.now()

    def set_pattern(self, pattern: Pattern) -> None:
        self._driver().set_pattern(pattern)

    def stream(self, direction: str, length: int, count: int, queue_depth: int,
               source: Source | None = None, sink: Sink | None = None) -> StreamResult:
        self.validate(direction, length, queue_depth)
        return self._driver().stream(direction, length, count, queue_depth, source, sink)

    def clear_telemetry(self) -> None:
        self._driver().clear_telemetry()

    def read_telemetry(self) -> Telemetry:
        return self._driver().read_telemetry()
