"""The lab's page (``report --store URL --group-by HOP -o lab.html``): the grouped table, the
upstream-limited groups named, and one overlay plot per group, self-contained as the run report
is (:mod:`.html`: inline CSS, plots as ``data:`` PNGs, no scripts or links)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from .. import __version__
from ..result_file import write_result
from ..store.groups import Group
from ..units import Units
from .compare import Run
from .fleet import group_rows, upstream_lines
from .html import _CSS, _e, _png_tag, _table

__all__ = ["render_lab", "write_lab", "OVERLAY_RUNS"]

#: At most this many curves per group's overlay: spread evenly over the group's plateaus
#: (lowest and highest always in), so a group of 200 runs stays a readable plot.
OVERLAY_RUNS = 8


def overlay_sample(group: Group, runs: dict[str, Run]) -> list[Run]:
    """The runs a group's overlay shows, lowest plateau first."""
    ordered = [runs[run_id] for _, run_id in sorted(zip(group.plateaus, group.run_ids,
                                                        strict=True)) if run_id in runs]
    if len(ordered) <= OVERLAY_RUNS:
        return ordered
    step = (len(ordered) - 1) / (OVERLAY_RUNS - 1)
    return [ordered[round(i * step)] for i in range(OVERLAY_RUNS)]


def _group_plot(group: Group, runs: dict[str, Run], units: Units) -> str:
    from .plots import overlay_png

    shown = overlay_sample(group, runs)
    if not shown:
        return "<p>No clean run with a plateau in this group.</p>"
    # Only this group's direction and MPS on its plot.
    picked = [Run(run.label, run.source, run.doc,
                  [e for e in run.entries if e["direction"] == group.direction
                   and e.get("mps") == group.mps]) for run in shown]
    title = f"{group.value}: {group.direction}" + (f" MPS {group.mps}" if group.mps else "")
    caption = (f"{len(shown)} of {len(group.plateaus)} runs (lowest to highest plateau: "
               + ", ".join(f"{r.label} = {r.source[:8]}" for r in picked) + ")")
    return (f"<h3>{_e(title)}</h3><p>{_e(caption)}</p>"
            + _png_tag(overlay_png(picked, units=units, title=title), f"overlay {title}"))


def render_lab(groups: Sequence[Group], runs: Sequence[Run], *,
               units: Units = Units.MB) -> str:
    """The whole page as a string; ``runs`` are the stored runs the groups were made of."""
    by_id = {run.source: run for run in runs}
    hop = groups[0].hop if groups else "group"
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    unit_text = (f"Throughput in {units.label} "
                 f"({'1 MB = 10^6 bytes' if units is Units.MB else '1 MiB = 2^20 bytes'}); "
                 "spread = (max - min) / median of the group's plateaus.")
    rows = group_rows(groups, units)
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>busprobe lab report by {_e(hop)}</title>",
           f"<style>{_CSS}</style></head><body>",
           f"<h1>busprobe lab report: {len(runs)} stored runs by {_e(hop)}</h1>",
           f'<p class="units">{_e(unit_text)} Generated {_e(now)} by busprobe '
           f"{_e(__version__)}.</p>",
           "<h2>Groups</h2>" + _table(rows, left=3,
                                      classes=[g.verdict or "" for g in groups])]
    upstream = upstream_lines(groups, units)
    if upstream:
        out.append("<h2>Upstream-limited groups</h2><ul>"
                   + "".join(f'<li class="upstream-limited">{_e(line)}</li>'
                             for line in upstream) + "</ul>")
    flagged = sorted({run for g in groups for run in g.flagged})
    if flagged:
        out.append(f'<p class="warn">{len(flagged)} run(s) with data errors are stored but '
                   f"left out of every figure: {_e(', '.join(r[:8] for r in flagged))}</p>")
    out.append("<h2>Overlay per group</h2>")
    out += [_group_plot(group, by_id, units) for group in groups]
    out.append("</body></html>")
    return "\n".join(out)


def write_lab(groups: Sequence[Group], runs: Sequence[Run], path: str | Path, *,
              units: Units = Units.MB) -> None:
    """Write the page (``-``: stdout), whole or not at all."""
    write_result(path, render_lab(groups, runs, units=units))
