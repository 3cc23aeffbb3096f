"""Overlay plot of several runs: one panel per direction, the deepest queue depth's curve of each
run and setting, its model (host profile, length, queue depth) dashed in the same colour, the
link model in grey, the verdict in the legend."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

from ..lengths import format_size
from ..protocol.names import Direction
from ..result_file import write_result
from ..stats import error_bar
from ..units import Units
from .compare import Run

__all__ = ["overlay_png", "overlay_label", "write_overlay"]


def overlay_label(run: Run, entry: dict) -> str:
    """A curve's legend entry, naming the run as the tables do: its letter, its device, the
    setting and queue depth, the verdict (``A xhci QD1: host-limited``)."""
    setting = " ".join(f"{k.upper()} {entry[k]}" for k in ("mps", "mrrs") if entry.get(k))
    parts = [run.label, run.device, setting, f"QD{entry.get('queue_depth')}:"]
    return f"{' '.join(p for p in parts if p)} {entry['verdict']}"


def overlay_png(runs: Sequence[Run], *, units: Units = Units.MB, title: str | None = None) -> bytes:
    """The overlay as PNG bytes (matplotlib Agg; no window is ever opened)."""
    import matplotlib

    matplotlib.use("Agg")  # must precede pyplot
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    directions: list[str] = []
    for run in runs:
        for e in run.entries:
            if e["direction"] not in directions:
                directions.append(e["direction"])
    directions = directions or ["(no data)"]
    fig, axes = plt.subplots(1, len(directions), figsize=(6.5 * len(directions), 5), dpi=100,
                             squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, direction in zip(axes[0], directions, strict=True):
        index = 0
        links: set[float] = set()
        for run in runs:
            for e in run.entries:
                if e["direction"] != direction:
                    continue
                colour = colours[index % len(colours)]
                index += 1
                points = sorted(
                    (p for p in run.doc["points"]
                     if p["direction"] == direction and p["queue_depth"] == e.get("queue_depth")
                     and p.get("mps") == e.get("mps")
                     and (direction != Direction.READ or p.get("mrrs") == e.get("mrrs"))),
                    key=lambda p: p["length"])
                # Each length's repeats as mean with min..max error bars (stats.error_bar).
                bars = [error_bar(p) for p in points]
                ax.errorbar([p["length"] for p in points],
                            [units.convert(mean) for mean, _, _ in bars],
                            yerr=[[units.convert(b) for _, b, _ in bars],
                                  [units.convert(a) for _, _, a in bars]],
                            fmt="o-", color=colour, markersize=3, capsize=2.5, elinewidth=1,
                            label=overlay_label(run, e))
                # Each run's own model (host profile, length, queue depth) dashed beside its
                # curve: a run on its model is limited by what the model names.
                modelled = [p for p in points if p.get("ceiling")]
                if modelled:
                    ax.plot([p["length"] for p in modelled],
                            [units.convert(p["ceiling"]) for p in modelled], "--", color=colour,
                            linewidth=1)
                if e.get("plateau_reached", True):  # a curve without one gets no line
                    ax.axhline(units.convert(e["plateau"]), color=colour, linestyle=":",
                               linewidth=1)
                links.add(units.convert(e["model"]))
        for link in sorted(links):
            ax.axhline(link, color="grey", linestyle="--", linewidth=1)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(
            FuncFormatter(lambda v, _: format_size(int(v)) if v >= 1 else ""))
        ax.set_xlabel("transfer length (bytes)")
        ax.set_ylabel(f"throughput ({units.label})")
        ax.set_ylim(bottom=0)
        ax.set_title(f"{direction} (dashed: each run's model, grey: link model, dotted: plateau)",
                     fontsize="medium")
        ax.grid(True, alpha=0.3)
        if index:
            ax.legend(fontsize="small", loc="lower right")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def write_overlay(runs: Sequence[Run], path: str | Path, *, units: Units = Units.MB) -> None:
    """The overlay as a PNG file (``-``: stdout), written as every result is
    (:mod:`busprobe.result_file`)."""
    write_result(path, overlay_png(runs, units=units))
