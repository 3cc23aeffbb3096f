"""Throughput-versus-length plots of one or more result documents (PNG, matplotlib Agg).

Length on a log₂ axis, throughput in MB/s or MiB/s; one line per direction / queue depth / MPS
(and per document when several are compared) through the repeats' means, with error bars from
the least to the most repeat (:func:`~busprobe.stats.error_bar`), the model ceiling dashed in
the same colour (a horizontal line where it does not depend on length), and points with data
errors marked with a red cross.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .lengths import format_size
from .result_file import write_result
from .stats import error_bar
from .units import Units

__all__ = ["plot_results", "plot_image", "plot_format", "series_of", "IMAGE_FORMATS"]

_Key = tuple[str, int, int | None, int | None]


def series_of(doc: dict[str, Any]) -> dict[_Key, list[dict[str, Any]]]:
    """Points grouped by (direction, queue depth, mps, mrrs), each group sorted by length."""
    groups: dict[_Key, list[dict[str, Any]]] = {}
    for point in doc["points"]:
        key = (point["direction"], point["queue_depth"], point.get("mps"), point.get("mrrs"))
        groups.setdefault(key, []).append(point)
    for points in groups.values():
        points.sort(key=lambda p: p["length"])
    return groups


def _label(key: _Key, prefix: str) -> str:
    direction, queue_depth, mps, mrrs = key
    parts = [prefix, direction, f"qd {queue_depth}"]
    parts += [f"{name} {value}" for name, value in (("MPS", mps), ("MRRS", mrrs)) if value]
    return " ".join(p for p in parts if p)


def plot_results(docs: Sequence[dict[str, Any]], path: str | Path, *, units: Units = Units.MB,
                 title: str | None = None, names: Sequence[str] | None = None) -> None:
    """Draw ``docs`` into one image at ``path`` (PNG, or the format its suffix names; ``-``:
    stdout), written as every result is (:mod:`busprobe.result_file`): a link is written
    through, a pipe in place, and a full disk is an error that leaves the old plot."""
    write_result(path, plot_image(docs, units=units, title=title, names=names,
                                  image_format=plot_format(path)))


def plot_image(docs: Sequence[dict[str, Any]], *, units: Units = Units.MB,
               title: str | None = None, names: Sequence[str] | None = None,
               image_format: str = "png") -> bytes:
    """``docs`` drawn into one image; ``names`` label each document (for compare)."""
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window; must precede pyplot
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=110)
    colours = itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    lengths: set[int] = set()
    top = 0.0  # highest value drawn, for headroom above lines that sit at the ceiling
    for index, doc in enumerate(docs):
        prefix = names[index] if names else (doc["device"] if len(docs) > 1 else "")
        for key, points in series_of(doc).items():
            colour = next(colours)
            x = [p["length"] for p in points]
            lengths.update(x)
            bars = [error_bar(p) for p in points]
            y = [units.convert(mean) for mean, _, _ in bars]
            top = max(top, *(units.convert(p["throughput_max"]) for p in points))
            ax.errorbar(x, y, yerr=[[units.convert(b) for _, b, _ in bars],
                                    [units.convert(a) for _, _, a in bars]],
                        fmt="o-", color=colour, markersize=3.5, capsize=3, elinewidth=1,
                        label=_label(key, prefix) + " (mean, min..max)")
            bad = [(p["length"], units.convert(p["throughput"])) for p in points if p["errors"]]
            if bad:
                ax.plot(*zip(*bad, strict=True), "x", color="red", markersize=9, mew=2,
                        label=f"{_label(key, prefix)}: data errors")
            ceilings = [p.get("ceiling") for p in points]
            if all(c is not None for c in ceilings):
                top = max(top, *(units.convert(c) for c in ceilings))
                if len(set(ceilings)) == 1:
                    ax.axhline(units.convert(ceilings[0]), color=colour, linestyle="--",
                               linewidth=1, label=f"model ceiling {_label(key, prefix)}")
                else:
                    ax.plot(x, [units.convert(c) for c in ceilings], "--", color=colour,
                            linewidth=1, label=f"model ceiling {_label(key, prefix)}")
    ax.set_xscale("log", base=2)
    if lengths:
        ax.set_xticks(sorted(lengths))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_size(int(v)) if v >= 1 else ""))
    ax.set_xlabel("transfer length (bytes)")
    ax.set_ylabel(f"throughput ({units.label})")
    ax.set_ylim(0, top * 1.12 if top > 0 else 1)
    ax.grid(True, which="major", alpha=0.3)
    if title is None and len(docs) == 1:
        bus = docs[0].get("bus") or {}
        host = f", host {bus['host_profile']}" if bus.get("host_profile") else ""
        title = f"{docs[0]['device']} ({bus.get('kind', '?')} {bus.get('speed', '')}{host})"
        if not docs[0].get("complete", True):
            title += " — INCOMPLETE"
    if title:
        ax.set_title(title)
    entries = len(ax.get_legend_handles_labels()[1])
    if entries > 6:  # many series: the legend goes beside the axes instead of over the data
        ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.set_size_inches(12, 5.5)
    else:
        ax.legend(fontsize="small", loc="lower right", framealpha=0.9)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format=image_format)
    plt.close(fig)
    return buffer.getvalue()


#: Image formats a plot file's suffix may name (matplotlib's Agg canvas writes them all).
IMAGE_FORMATS = ("png", "svg", "pdf", "eps", "ps")


def plot_format(path: str | Path) -> str:
    """The image format a plot file's suffix names (``.svg``, ``.pdf``), PNG otherwise (and for
    ``-``, stdout)."""
    suffix = Path(str(path)).suffix.lower().lstrip(".")
    return suffix if suffix in IMAGE_FORMATS else "png"
