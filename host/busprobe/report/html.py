"""One self-contained HTML page for one or more runs: verdicts, comparison, plots, topology.

Everything is inline: CSS in a ``<style>`` element, plots as base64 PNG ``data:`` URIs, no
scripts, fonts or links to anything outside the file, so the page can be mailed or archived.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import __version__
from ..buses import PCIE
from ..lengths import format_size
from ..result_file import write_result
from ..topology.hop import format_hops
from ..units import Units
from .bot_overhead import bot_overhead_sections
from .compare import Run, comparison_rows, differences

__all__ = ["render_report", "write_report"]

_CSS = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { border-bottom: 3px solid #246; } h2 { border-bottom: 1px solid #aaa; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #eef; } td.l, th.l { text-align: left; }
.link-limited { background: #d8f5d8; } .host-limited { background: #fff1c2; }
.upstream-limited { background: #ffe0c2; } .device-limited { background: #f7b0b0; }
.tool-limited { background: #d9d2f0; }
.verdict { padding: 0.6em 1em; margin: 0.5em 0; border-radius: 4px; }
.warn { color: #a00; font-weight: bold; } pre { background: #f6f6f6; padding: 0.6em; }
img { max-width: 100%; border: 1px solid #ddd; } .units { color: #555; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _png_tag(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{data}">'


def _run_plot(run: Run, units: Units) -> bytes:
    """The single-run plot of :mod:`busprobe.plot` (all queue depths, min-max bands)."""
    from ..plot import plot_image

    return plot_image([run.doc], units=units)


def _table(rows: Sequence[Sequence[str]], *, left: int = 1, classes: Sequence[str] = ()) -> str:
    head = "".join(f'<th class="l">{_e(c)}</th>' if i < left else f"<th>{_e(c)}</th>"
                   for i, c in enumerate(rows[0]))
    body = []
    for n, row in enumerate(rows[1:]):
        cls = f' class="{classes[n]}"' if n < len(classes) and classes[n] else ""
        cells = "".join(f'<td class="l">{_e(c)}</td>' if i < left else f"<td>{_e(c)}</td>"
                        for i, c in enumerate(row))
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _plateau_figure(e: dict[str, Any], units: Units) -> str:
    """``plateau 48.85 MB/s (spread 0.4 %, from 128K)``, or why there is none."""
    lengths = e.get("plateau_lengths") or [0]
    if e.get("plateau_reached", True):
        return (f"plateau {units.format(e['plateau'])} (spread {e['plateau_spread'] * 100:.1f} "
                f"%, from {format_size(min(lengths))})")
    return (f"plateau not reached ({e.get('plateau_why') or 'rising'}): "
            f"{format_size(max(lengths))} reached {units.format(e['plateau'])}")


def _verdicts(run: Run, units: Units) -> str:
    parts = []
    for e in run.entries:
        setting = " ".join(f"{k.upper()} {e[k]}" for k in ("mps", "mrrs") if e.get(k))
        figures = (f"{_plateau_figure(e, units)} = {e['efficiency'] * 100:.1f} % of the link model "
                   f"{units.format(e['model'])}")
        if e.get("profile_ceiling"):
            figures += (f"; host profile {e['profile']}: {units.format(e['profile_ceiling'])}"
                        f" ({e['profile_efficiency'] * 100:.1f} %)")
        formula = e.get("model_formula") or ""
        parts.append(
            f'<div class="verdict {_e(e["verdict"])}"><b>{_e(e["direction"])} {_e(setting)}: '
            f'{_e(e["verdict"])}</b><br>{_e(e["explanation"])}<br><small>{_e(figures)}</small>'
            f"<details><summary>link model derivation</summary><pre>{_e(formula)}</pre>"
            f"</details></div>")
    return "".join(parts) or "<p>No verdict (no points).</p>"


def _points(run: Run, units: Units) -> str:
    rows: list[tuple[str, ...]] = [("direction", "length", "QD", "MPS", "MRRS",
                                    f"throughput {units.label}", f"min {units.label}",
                                    f"max {units.label}", f"device {units.label}", "errors")]
    for p in run.doc["points"]:
        device = p.get("device_throughput")
        rows.append((p["direction"], format_size(p["length"]), str(p["queue_depth"]),
                     str(p.get("mps") or "-"), str(p.get("mrrs") or "-"),
                     f"{units.convert(p['throughput']):.2f}",
                     f"{units.convert(p.get('throughput_min', p['throughput'])):.2f}",
                     f"{units.convert(p.get('throughput_max', p['throughput'])):.2f}",
                     "-" if device is None else f"{units.convert(device):.2f}",
                     str(p.get("errors", 0))))
    return _table(rows)


def _run_section(run: Run, units: Units, with_plot: bool) -> str:
    doc = run.doc
    bus = doc.get("bus") or {}
    meta = [("source", run.source), ("device", doc.get("device", "?")),
            ("bus", " ".join(str(bus.get(k)) for k in ("kind", "speed") if bus.get(k))
             + (f" x{bus['width']}" if bus.get("width") and bus.get("kind") == PCIE.kind else "")
             + (f", host profile {bus['host_profile']}" if bus.get("host_profile") else "")),
            ("written by", f"busprobe {doc.get('busprobe_version', '?')}"),
            ("started", doc.get("started", "-")), ("finished", doc.get("finished", "-"))]
    out = [f"<h2>{_e(run.label)}: {_e(doc.get('device', '?'))}</h2>",
           _table([("what", "value"), *meta], left=2)]
    if not doc.get("complete", True):
        out.append(f'<p class="warn">INCOMPLETE run: {_e(doc.get("error"))} '
                   f'({len(doc["points"])} points kept)</p>')
    errors = sum(int(p.get("errors") or 0) for p in doc["points"])
    if errors:
        out.append(f'<p class="warn">DATA ERRORS: {errors} — the affected points are left out '
                   "of the verdict.</p>")
    out.append("<h3>Verdict</h3>" + _verdicts(run, units))
    if with_plot:
        out.append("<h3>Throughput versus transfer length</h3>"
                   + _png_tag(_run_plot(run, units), f"{run.label} throughput plot"))
    out.append("<h3>Topology (root first)</h3><pre>"
               f"{_e(format_hops(doc.get('topology') or []))}</pre>")
    out.append(f"<details><summary>All {len(doc['points'])} points</summary>"
               f"{_points(run, units)}</details>")
    return "".join(out)


def render_report(runs: Sequence[Run], *, units: Units = Units.MB, plots: bool = True) -> str:
    """The whole page as a string."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    unit_text = (f"Throughput in {units.label} "
                 f"({'1 MB = 10^6 bytes' if units is Units.MB else '1 MiB = 2^20 bytes'}); "
                 "lengths in bytes (K = 1024).")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>busprobe report: {_e(', '.join(r.doc.get('device', '?') for r in runs))}"
           "</title>", f"<style>{_CSS}</style></head><body>",
           "<h1>busprobe report</h1>",
           f'<p class="units">{_e(unit_text)} Generated {_e(now)} by busprobe {_e(__version__)}.'
           "</p>"]
    out.append(_table([("run", "source", "device"),
                       *[(r.label, r.source, r.doc.get("device", "?")) for r in runs]], left=3))
    rows = comparison_rows(runs, units)
    verdict_classes = [row[-1] for row in rows[1:]]
    out.append("<h2>Summary</h2>" + _table(rows, left=3, classes=verdict_classes))
    if len(runs) > 1:
        diffs = differences(runs, units)
        if diffs:
            out.append("<h3>What explains the differences</h3><ul>"
                       + "".join(f"<li>{_e(d)}</li>" for d in diffs) + "</ul>")
        for title, rows, notes in bot_overhead_sections(runs, units):
            out.append(f"<h3>{_e(title)}</h3>" + (_table(rows, left=2) if rows else "")
                       + "".join(f"<p>{_e(note)}</p>" for note in notes))
        if plots:
            from .plots import overlay_png

            out.append("<h3>Overlay (deepest queue depth of each run)</h3>"
                       + _png_tag(overlay_png(runs, units=units), "overlay plot"))
    for run in runs:
        out.append(_run_section(run, units, plots))
    out.append("</body></html>")
    return "\n".join(out)


def write_report(runs: Sequence[Run], path: str | Path, *, units: Units = Units.MB) -> None:
    """Write the page (``-``: stdout); a file appears whole or not at all
    (:mod:`busprobe.result_file`)."""
    write_result(path, render_report(runs, units=units))
