"""What a bus's verdict rule reads and returns: typed point results, one group's evidence, the
finding, and the wording every rule shares.

:func:`busprobe.verdict.assess.assess` reads a result's points into :class:`PointRecord` s, finds
the plateau of one direction (and PCIe setting) and hands a :class:`GroupEvidence` to the rule
its bus row names (:attr:`busprobe.buses.Bus.verdict`); the rule returns a :class:`Finding`.
Adding a bus is its row plus its rule: nothing here or in ``assess`` branches on the bus.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..lengths import format_size
from ..model import Ceiling
from ..transport import BusDescription
from ..units import Units
from .plateau import Plateau

__all__ = ["PointRecord", "GroupEvidence", "Finding", "VerdictRule", "LINK_LIMITED",
           "VERDICTS", "mb", "cap", "header", "units_in_force"]

#: Plateau / link model at or above which a run is link-limited.
LINK_LIMITED = 0.95
VERDICTS = ("link-limited", "host-limited", "driver-limited", "upstream-limited",
            "device-limited", "tool-limited")

#: The units :func:`busprobe.verdict.assess.assess` was asked for, for every sentence it writes.
units_in_force: ContextVar[Units] = ContextVar("busprobe_verdict_units", default=Units.MB)


def mb(value: float) -> str:
    """A throughput in the units the verdict was asked for (MB/s unless told)."""
    return units_in_force.get().format(value)


def cap(text: str) -> str:
    """``text`` with its first letter capitalised (a sentence that starts with a clause)."""
    return text[:1].upper() + text[1:]


def header(plateau: Plateau, link: Ceiling, efficiency: float) -> str:
    """The clause comparing the plateau (or the figure a curve ends at) with the link model."""
    what = (f"plateau {mb(plateau.value)} (from {format_size(plateau.start)})"
            if plateau.reached else
            f"{format_size(plateau.start)}'s {mb(plateau.value)} (no plateau reached)")
    return f"{what} is {efficiency * 100:.1f} % of the link model {mb(link.throughput)}"


def _number(value: Any) -> float | None:
    """A figure, None when absent or null (a zero is kept: the rules read it as no figure)."""
    return float(value) if value is not None else None


@dataclass(frozen=True)
class PointRecord:
    """One point of a result document as the verdict reads it (docs/DESIGN.md §2.4).

    Attributes
    ----------
    direction : str
        Its direction (``in``, ``write`` ...).
    length, queue_depth : int
        Transfer length (bytes) and queue depth; ``queue_depth`` is None when not recorded.
    transfers : int or None
        Transfers in each repeat (the run a host-timed ceiling is of), None when not recorded.
    mps, mrrs : int or None
        PCIe settings in force (None elsewhere).
    throughput : float or None
        Host-timed median of the repeats (bytes/s); None when the point moved nothing.
    spread : float or None
        (max - min) / median of its repeats.
    errors : int
        Data errors; a point with any is left out of the verdict.
    device_throughput, device_run_throughput : float or None
        Timed by the device's counters; run by the device itself (the PCIe SoC's firmware).
    telemetry : dict
        The device's raw counters of the point (empty when it has none).
    tool_limited : bool
        Within its repeats' spread of what busprobe's own host path sustains on this machine.
    tool_path, tool_completions_per_s, tool_ceiling
        That host path, its completions per second and its throughput (bytes/s).
    """

    direction: str
    length: int
    queue_depth: int | None
    mps: int | None = None
    mrrs: int | None = None
    transfers: int | None = None
    throughput: float | None = None
    spread: float | None = None
    errors: int = 0
    device_throughput: float | None = None
    device_run_throughput: float | None = None
    telemetry: dict[str, Any] = field(default_factory=dict)
    tool_limited: bool = False
    tool_path: str | None = None
    tool_completions_per_s: float | None = None
    tool_ceiling: float | None = None

    @classmethod
    def from_json(cls, point: Mapping[str, Any]) -> PointRecord:
        """A result document's point (extra keys are ignored)."""
        depth = point.get("queue_depth")
        return cls(
            direction=str(point["direction"]), length=int(point["length"]),
            queue_depth=int(depth) if depth is not None else None,
            mps=point.get("mps"), mrrs=point.get("mrrs"),
            transfers=int(point["transfers"]) if point.get("transfers") else None,
            throughput=_number(point.get("throughput")), spread=point.get("spread"),
            errors=int(point.get("errors") or 0),
            device_throughput=_number(point.get("device_throughput")),
            device_run_throughput=_number(point.get("device_run_throughput")),
            telemetry=dict(point.get("telemetry") or {}),
            tool_limited=bool(point.get("tool_limited")), tool_path=point.get("tool_path"),
            tool_completions_per_s=_number(point.get("tool_completions_per_s")),
            tool_ceiling=_number(point.get("tool_ceiling")))


@dataclass(frozen=True)
class GroupEvidence:
    """What a bus's verdict rule weighs for one direction (and PCIe setting).

    Attributes
    ----------
    bus : BusDescription
        The bus, with the group's MPS/MRRS in force.
    direction : str
        The group's direction.
    plateau : Plateau
        The deepest queue's curve's plateau (or the figure it ends at).
    link : Ceiling
        The link model (what the bus allows, whatever the host).
    efficiency : float
        ``plateau.value / link.throughput``.
    profile : Ceiling or None
        The host profile's ceiling where the bus row reports it beside the link (USB).
    run : Plateau or None
        The plateau of the same points run by the device itself, where it ran them.
    telemetries : list of dict
        The device counters of the plateau's points at the deepest queue (empty dicts for
        points without counters).
    queue_depth : int or None
        The deepest queue's depth (the plateau's points').
    """

    bus: BusDescription
    direction: str
    plateau: Plateau
    link: Ceiling
    efficiency: float
    profile: Ceiling | None
    run: Plateau | None
    telemetries: list[dict[str, Any]]
    queue_depth: int | None = None

    @property
    def head(self) -> str:
        """:func:`header` of this group."""
        return header(self.plateau, self.link, self.efficiency)


@dataclass(frozen=True)
class Finding:
    """What a verdict rule concluded.

    Attributes
    ----------
    verdict : str
        One of :data:`VERDICTS`.
    why : str
        The sentence(s) with the numbers that lead to it.
    evidence : dict or None
        The telemetry summary the rule read (the result's ``evidence``), None without one.
    """

    verdict: str
    why: str
    evidence: dict[str, Any] | None = None


#: A bus's verdict rule (``"module:name"`` in :attr:`busprobe.buses.Bus.verdict`).
VerdictRule = Callable[[GroupEvidence], Finding]
