"""The one interface every bus backend implements, real or simulated.

The sweep engine, statistics, models and reports see a bus only through :class:`Transport` and
:class:`BusDescription`. A real backend (libusb, VFIO) and a simulated one (cocotb + Verilator)
implement the same methods, so every sweep path the user runs on a board also runs in CI.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from .protocol.patterns import Pattern

__all__ = [
    "BusDescription", "StreamResult", "Telemetry", "Transport", "TransportError",
    "DeviceNotFound", "PermissionDenied", "DeviceGone", "TransferTimeout", "InvalidRequest",
    "EndpointStalled", "RepeatFailed", "Source", "Sink", "DeviceRunResult", "DeviceRunFailed",
]

#: Produces the next ``n`` bytes to send (OUT / write).
Source = Callable[[int], bytes]
#: Consumes received bytes in stream order (IN / read).
Sink = Callable[[bytes], None]


class TransportError(Exception):
    """Base of every error a backend raises; ``str()`` is a one-line message for the user."""


class DeviceNotFound(TransportError):
    pass


class PermissionDenied(TransportError):
    pass


class DeviceGone(TransportError):
    """The device disappeared mid-run (unplugged, link down, simulator exited)."""


class TransferTimeout(TransportError):
    pass


class EndpointStalled(TransportError):
    """The device answered STALL (an unsupported request, a halted endpoint): a relay of the
    device (the usbredir export) must pass it on as a STALL, not as an I/O error."""


class RepeatFailed(TransportError):
    """A stream lost data on the bus, and the transport recovered: no figure may be taken from
    it, but the device works and the next stream can run. The sweep flags the point and goes on
    (after restarting the pattern), unless every repeat of the point failed."""


class DeviceRunFailed(TransportError):
    """The device ran transfers by itself and reports that it failed (no buffer, a timeout, a
    failed read): the point's device-run has no figure; the host-run's stands."""


class InvalidRequest(TransportError):
    """The request cannot be carried out on this bus (bad length, queue depth, MPS, ...)."""


@dataclass(frozen=True)
class BusDescription:
    """What the sweep engine and the ceiling model need to know about a bus configuration.

    Attributes
    ----------
    kind : str
        A row of :data:`busprobe.buses.BUSES` (``"usb2-hs"``, ``"pcie"``).
    speed : str
        ``"high"``/``"super"`` for USB, ``"gen1"``/``"gen2"``/``"gen3"`` for PCIe.
    width : int
        Lane count (1 for USB).
    mps, mrrs : int or None
        PCIe Max Payload / Max Read Request Size in force.
    host_profile : str or None
        USB host-controller profile name (``ideal``, ``ehci``, ``xhci``, a file), when known.
    max_packet_size : int or None
        USB endpoint max packet size.
    extra : dict
        Anything else a backend wants recorded (read completion boundary, caps, ...).
    protocol : str
        How transfers are framed: ``stream`` (bare bulk transfers, queued), or ``bot`` (USB
        mass storage Bulk-Only Transport: CBW, data, CSW per transfer, one at a time).
    """

    kind: str
    speed: str
    width: int = 1
    mps: int | None = None
    mrrs: int | None = None
    host_profile: str | None = None
    max_packet_size: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    protocol: str = "stream"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class StreamResult:
    """Outcome of one :meth:`Transport.stream` call.

    ``start`` and ``end`` are on the transport's clock (:meth:`Transport.now`): from the first
    submission to the last completion, so ``bytes / (end - start)`` is host-timed throughput.
    """

    direction: str
    bytes: int
    transfers: int
    start: float
    end: float
    short_transfers: int = 0  # completions with fewer bytes than asked
    #: A transport that checks its own data (:attr:`Transport.checks_own_data`): the 32-bit words
    #: it read that were not what the device must hold, and the offset of the first.
    mismatched_words: int = 0
    first_error_offset: int | None = None

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class DeviceRunResult:
    """One device-run.

    Attributes
    ----------
    direction : str
    bytes : int
        Payload bytes the core moved.
    seconds : float
        Device-timed: the run's first TLP to its last, on the core clock.
    total_seconds : float
        The engine's start to its last descriptor done (the firmware's loop included).
    errors : int
        The device's (pattern errors, link faults) and the host's (bytes of a ``write`` not
        as the pattern says, in 32-bit words).
    """

    direction: str
    bytes: int
    seconds: float
    total_seconds: float
    errors: int

    @property
    def throughput(self) -> float:
        return self.bytes / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Telemetry:
    """Device counters read after a point, decoded by the bus's driver.

    Attributes
    ----------
    raw : dict
        Every counter as the device reported it (recorded in the result JSON).
    device_seconds : dict
        Per direction, the time the device measured from its first to its last data, or absent.
    device_bytes : dict
        Per direction, the payload bytes the device counted.
    window_bytes : dict
        Per direction, the bytes moved within ``device_seconds`` when the device times only part
        of its traffic (USB: whole microframes); absent, ``device_bytes`` is what was timed.
    errors : dict
        Per direction, data errors the *device* detected (OUT / read-side checker).
    first_error_offset : dict
        Per direction, stream offset of the first error the device detected.
    """

    raw: dict[str, Any] = field(default_factory=dict)
    device_seconds: dict[str, float] = field(default_factory=dict)
    device_bytes: dict[str, int] = field(default_factory=dict)
    window_bytes: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    first_error_offset: dict[str, int | None] = field(default_factory=dict)

    def device_throughput(self, direction: str) -> float | None:
        seconds = self.device_seconds.get(direction)
        timed = self.window_bytes.get(direction, self.device_bytes.get(direction))
        if not seconds or timed is None:
            return None
        return timed / seconds


class Transport(abc.ABC):
    """A connection to one device on one bus.

    Use as a context manager. Directions a bus offers are listed in :attr:`directions`
    (``in``/``out`` for USB; ``write``/``read``/``loopback`` for PCIe, named from the device's DMA:
    ``write`` = device writes host memory).
    """

    selector: str
    directions: tuple[str, ...]
    #: The host path a point's tool ceiling is measured for (:mod:`busprobe.tool_ceiling`):
    #: ``libusb``, ``vfio``, or None where there is none (a simulation's clock stands still
    #: while the host computes, so the tool cannot limit it).
    tool_path: str | None = None
    #: A point's repeat moves at least this many transfers and bytes so start-up effects are
    #: amortised. Hardware is noisy and fast: 8 transfers and 4 MiB. A simulated bus is
    #: deterministic and slow to run, so sim backends lower these (and say why) without changing
    #: the sweep code.
    min_transfers: int = 8
    min_bytes: int = 4 << 20
    #: ...but no more than this many transfers, nor more than ``max_bus_seconds`` of bus time by
    #: the ceiling model: tiny transfers reach the byte volume only after hundreds of thousands
    #: of transfers, each paying the host's per-transfer cost, and their figure settles long
    #: before that.
    max_transfers: int = 1 << 16
    max_bus_seconds: float = 2.0
    #: ...and at least this much bus time by the ceiling model (when it covers the point), so a
    #: device that times whole bus intervals always has some to time.
    min_bus_seconds: float = 0.0
    #: Longest length of the default ``busprobe sweep`` ladder (``--lengths`` not given). Sim
    #: backends lower it so the default sweep finishes in about a minute of simulation.
    default_max_length: int = 4 << 20

    #: Moving into or out of ``loopback`` restarts the device's pattern streams; the sweep then
    #: restarts its own copies at the same moment (a USB device flushes its IN buffer).
    loopback_restarts_pattern: bool = False

    #: The transport generates what it writes and checks what it reads itself, against data the
    #: device defines (a null disk's LBA pattern): the sweep's source and sink are not used and
    #: its mismatches come in :attr:`StreamResult.mismatched_words`.
    checks_own_data: bool = False

    #: Transfer framings this transport offers (:attr:`BusDescription.protocol`), the default first.
    protocols: tuple[str, ...] = ("stream",)

    @property
    @abc.abstractmethod
    def bus(self) -> BusDescription:
        """The bus configuration currently in force."""

    def __enter__(self) -> Transport:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abc.abstractmethod
    def open(self) -> None: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    @abc.abstractmethod
    def now(self) -> float:
        """Seconds on this transport's clock: wall clock on hardware, simulated time in sim."""

    @abc.abstractmethod
    def set_pattern(self, pattern: Pattern) -> None:
        """Restart the device's source and checker at the start of ``pattern``."""

    def configure(self, **settings: Any) -> None:
        """Change bus settings between points (PCIe ``mps``/``mrrs``). Default: none supported."""
        if settings:
            raise InvalidRequest(f"{self.selector}: cannot set {', '.join(settings)}")

    def set_protocol(self, protocol: str) -> None:
        """Frame every transfer from now on as ``protocol`` (one of :attr:`protocols`)."""
        if protocol not in self.protocols:
            raise InvalidRequest(f"{self.selector}: protocol '{protocol}' is not offered "
                                 f"(offered: {', '.join(self.protocols)})")

    def validate(self, direction: str, length: int, queue_depth: int) -> None:
        """Raise :class:`InvalidRequest` if a point cannot run; called before any data moves."""
        if direction not in self.directions:
            choices = ", ".join(self.directions)
            raise InvalidRequest(f"direction '{direction}' is not one of {choices}")
        if length <= 0:
            raise InvalidRequest(f"length must be positive, not {length}")
        if queue_depth < 1:
            raise InvalidRequest(f"queue depth must be at least 1, not {queue_depth}")

    def device_run_directions(self) -> tuple[str, ...]:
        """Directions the device can run by itself (firmware on the board moving the data, no
        host software per transfer), () if it cannot; the sweep runs them beside the host-run
        figure of each point."""
        return ()

    #: Repeats of a device-run per point (None: the plan's). A simulated device is
    #: deterministic and slow to run, so sim backends lower it.
    device_run_repeats: int | None = None
    #: Most bytes one device-run moves (its buffer); 0 when the device cannot run.
    device_run_bytes: int = 0

    def device_run(self, direction: str, length: int, count: int,
                   pattern: Pattern) -> DeviceRunResult:
        """``count`` transfers of ``length`` bytes run by the device, device-timed, every byte
        checked (the device restarts ``pattern`` for it)."""
        raise InvalidRequest(f"{self.selector}: the device cannot run transfers by itself")

    @abc.abstractmethod
    def stream(self, direction: str, length: int, count: int, queue_depth: int,
               source: Source | None = None, sink: Sink | None = None) -> StreamResult:
        """Move ``count`` transfers of ``length`` bytes, keeping ``queue_depth`` outstanding.

        Outgoing data is taken from ``source`` in stream order; incoming data is handed to
        ``sink`` in stream order, every byte of it.
        """

    def prepare(self, direction: str, length: int) -> None:  # noqa: B027 - optional hook
        """Get ready for a stream of ``direction``/``length`` without moving data: what would
        otherwise put control traffic on the bus inside another target's window when several
        run together (:mod:`busprobe.together`). Default: nothing to do."""

    @abc.abstractmethod
    def clear_telemetry(self) -> None: ...

    @abc.abstractmethod
    def read_telemetry(self) -> Telemetry: ...

    def topology(self) -> list[dict[str, Any]]:
        """One dict per hop from the root to the device (see ``busprobe topology``)."""
        return []
