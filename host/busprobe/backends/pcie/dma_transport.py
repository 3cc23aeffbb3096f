"""The PCIe :class:`~busprobe.transport.Transport`, one for the VFIO and simulated backends.

Both backends only supply a :class:`~busprobe.backends.pcie.platform.DmaPlatform` (registers,
buffers, MSI, clock, and the bus's description, settings and topology); everything the sweep
sees (validation, patterns, streaming, telemetry) is :class:`PcieDmaDriver` underneath. Where
the SoC's firmware runs, the transport also offers the device-run DMA
(:mod:`.device_run`): it publishes one pinned buffer when it opens.
"""

from __future__ import annotations

from typing import Any

from ...protocol import pcie as proto
from ...protocol.patterns import Pattern
from ...transport import (
    BusDescription,
    DeviceGone,
    DeviceRunResult,
    InvalidRequest,
    Sink,
    Source,
    StreamResult,
    Telemetry,
    Transport,
)
from .device_run import DIRECTIONS as DEVICE_RUN_DIRECTIONS
from .device_run import DeviceRun
from .driver import DIRECTIONS, DmaPlatform, PcieDmaDriver, split_transfer

__all__ = ["PcieDmaTransport"]


class PcieDmaTransport(Transport):
    """A busprobe PCIe device behind some :class:`DmaPlatform`.

    Parameters
    ----------
    platform : DmaPlatform
        Registers, buffers, MSI, clock and bus.

    Attributes
    ----------
    platform : DmaPlatform
        As given.
    identity : dict
        What the device reported when it opened (magic, version, MPS/MRRS in force, ...).
    """

    directions = DIRECTIONS
    #: Largest transfer: one buffer per transfer in flight, the descriptor length field's limit.
    max_length = proto.DESC_MAX_LENGTH
    #: The device-run's buffer, allocated and pinned when the transport opens (its volume per
    #: run; the host-run's repeats move 4 MiB on a board).
    device_run_bytes = 4 << 20

    def __init__(self, platform: DmaPlatform) -> None:
        self.platform = platform
        self.selector = platform.name
        self.tool_path = platform.tool_path
        self.driver: PcieDmaDriver | None = None
        self.device: DeviceRun | None = None
        self.identity: dict[str, int] = {}

    def open(self) -> None:
        self.platform.open()
        try:
            self.driver = PcieDmaDriver(self.platform, **self.platform.driver_options)
            self.identity = self.driver.probe()
            self.driver.set_pattern(Pattern.COUNTER)
            device = DeviceRun(self.platform, self.driver.clock_hz)
            if device.available():
                device.publish(self.device_run_bytes)
                self.device = device
        except BaseException:
            self.driver = self.device = None
            self.platform.close()
            raise

    def close(self) -> None:
        """Stop the DMA and release everything; also undoes :meth:`configure` when the
        transport was never opened."""
        try:
            if self.device is not None:
                self.device.withdraw()
            if self.driver is not None:
                self.driver.reset()
                self.driver.free_buffers()
        except DeviceGone:  # nothing left to stop or free
            pass
        finally:
            self.driver = self.device = None
            self.platform.close()

    @property
    def bus(self) -> BusDescription:
        """The platform's bus, with MPS/MRRS as the device reports them once open."""
        return self.platform.bus(self.identity)

    def configure(self, **settings: Any) -> None:
        unknown = set(settings) - {"mps", "mrrs"}
        if unknown:
            raise InvalidRequest(f"{self.selector}: cannot set {', '.join(sorted(unknown))}")
        self.platform.configure(**settings)
        if self.driver is not None:
            self.identity = self.driver.probe()

    def topology(self) -> list[dict[str, Any]]:
        return self.platform.topology(self.bus)

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

    def device_run_directions(self) -> tuple[str, ...]:
        return tuple(DEVICE_RUN_DIRECTIONS) if self.device is not None else ()

    def device_run(self, direction: str, length: int, count: int,
                   pattern: Pattern) -> DeviceRunResult:
        self.validate(direction, length, 1)
        if self.device is None:
            return super().device_run(direction, length, count, pattern)
        return self.device.run(direction, length, count, pattern)

    def clear_telemetry(self) -> None:
        self._driver().clear_telemetry()

    def read_telemetry(self) -> Telemetry:
        return self._driver().read_telemetry()
