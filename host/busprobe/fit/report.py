"""What ``busprobe fit`` prints: the fitted parameters, how sure, what the sweep left open.

One table of the six profile parameters (value, uncertainty), how far the fitted profile's model
(each point's range over start phases) is from each measured point, then every parameter the
sweep did not pin down with the points that would and the sweep command that measures them.
"""

from __future__ import annotations

import shlex

from ..lengths import format_size
from ..protocol.names import USB_DIRECTIONS
from .fitted import UNITS, FittedProfile
from .predict import predict
from .suggest import Suggestion

__all__ = ["format_fit", "model_deviations"]


def model_deviations(fitted: FittedProfile) -> list[tuple[str, float]]:
    """Per point, ``(label, deviation)``: how far outside the fitted profile's predicted range
    the measurement lies, relative (0 inside it)."""
    data = fitted.data
    profile = fitted.written.profile()
    out = []
    for point in data.points:
        low, high = predict(profile, point, data.max_packet_size).throughput
        nearest = min(high, max(low, point.throughput))
        out.append((point.label, nearest / point.throughput - 1))
    return out


def _value(value: int | float | bool, unit: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value} {unit}".strip()


def format_fit(fitted: FittedProfile, *, seconds: float | None = None) -> str:
    """The command's report (see module)."""
    data, found = fitted.data, fitted.estimate
    objective = found.objective
    directions = ", ".join(data.directions)
    timing = f"; {seconds:.1f} s" if seconds is not None else ""
    lines = [f"fit of {data.path} ({data.device or 'device not recorded'}): {len(data.points)} "
             f"points ({directions}), misfit χ² {found.misfit:.1f} over {objective.count} "
             f"residuals (noise: throughput {100 * objective.throughput_noise:.3f} %, tail "
             f"{objective.tail_noise * 1e6:.2f} µs){timing}"]
    rows = [("parameter", "value", "uncertainty")]
    rows += [(key, _value(v.value, UNITS[key]), v.uncertainty + ("" if v.determined else " !"))
             for key, v in fitted.values.items()]
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    lines += [f"  {r[0].ljust(widths[0])}  {r[1].ljust(widths[1])}  {r[2]}" for r in rows]
    for direction, (naks, tokens) in data.naks.items():
        if naks:
            lines.append(f"!! the device NAKed {naks} of {tokens} {direction.upper()} tokens "
                         f"({100 * naks / tokens:.1f} %): the curve is partly the device's, and "
                         "the profile describes host and device together")
    deviations = model_deviations(fitted)
    label, worst = max(deviations, key=lambda d: abs(d[1]))
    lines.append(f"the fitted profile's model (each point's range over start phases) vs the "
                 f"sweep: every point within {100 * abs(worst):.2f} % (worst: {label})")
    open_ = fitted.undetermined
    if not open_:
        lines.append("every parameter is determined by this sweep")
    for value in open_:
        lines.append(f"not determined: {value.key}: {value.why}")
        if value.suggestions:
            points = ", ".join(f"{s.direction} {format_size(s.length)} qd {s.queue_depth} "
                               f"({100 * s.separation:.1f} % apart)" for s in value.suggestions)
            lines.append(f"  would be pinned down by {points}")
            lines.append(_sweep_command(fitted, value.suggestions))
        elif "--direction" not in value.why:
            lines.append("  no length of 1..16 packets or power of two, at queue depth 1..8, "
                         "tells its possible values apart")
    return "\n".join(lines)


def _sweep_command(fitted: FittedProfile, suggestions: list[Suggestion]) -> str:
    """The sweep that measures the suggested points beside the ones fitted: one result the fit
    can read again."""
    data = fitted.data
    points = [(p.direction, p.length, p.queue_depth) for p in data.points] + \
        [(s.direction, s.length, s.queue_depth) for s in suggestions]
    directions = ",".join(d for d in USB_DIRECTIONS if any(p[0] == d for p in points))
    lengths = ",".join(str(n) for n in sorted({p[1] for p in points}))
    depths = ",".join(str(n) for n in sorted({p[2] for p in points}))
    return "  " + shlex.join(["busprobe", "sweep", "--device", data.device or "DEVICE",
                              "--direction", directions, "--lengths", lengths,
                              "--queue-depth", depths, "--json", "RESULT.json"])
