"""Side-by-side comparison of result documents, and the differences that explain their gap.

Each run is labelled with a letter (A, B, ...). For every direction the table shows the plateau,
its share of the link model, the queue-depth effect and the verdict; :func:`differences` then
says, in sentences, what distinguishes the slower runs: the host controller and its packets per
microframe, a link trained below capability, an upstream limit, a different configuration.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..buses import PCIE
from ..lengths import format_size
from ..protocol.names import Framing
from ..result_schema import protocol_of
from ..results import ceilings_of
from ..stats import point_spread
from ..topology.hop import hop_field, hop_findings
from ..units import Units
from ..verdict import assess
from .bot_overhead import bot_overhead_sections
from .storage_compare import storage_sections

__all__ = ["Run", "load_runs", "runs_from_docs", "format_comparison", "differences",
           "verdicts_of", "controller_name", "plateau_cell"]

log = logging.getLogger(__name__)


@dataclass
class Run:
    """One result document in a comparison.

    Attributes
    ----------
    label : str
        ``A``, ``B``, ...
    source : str
        Where it came from (file name).
    doc : dict
        The result document.
    entries : list of dict
        Its verdict entries (:func:`busprobe.verdict.assess`, or the stored ones).
    """

    label: str
    source: str
    doc: dict[str, Any]
    entries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.label}: {self.doc.get('device', '?')}"

    @property
    def device(self) -> str:
        """What tells this run's device apart in a legend: its host profile (``xhci``), else
        its selector (``sim:pcie?gen=2&width=1``)."""
        bus = self.doc.get("bus") or {}
        return str(bus.get("host_profile") or self.doc.get("device") or "?")


#: How the field spells the host-controller interfaces (a profile name is lower case).
_CONTROLLERS = {"xhci": "xHCI", "ehci": "EHCI", "ohci": "OHCI", "uhci": "UHCI"}


def controller_name(profile: str) -> str:
    """``xhci`` -> ``xHCI``, ``ehci`` -> ``EHCI``; another profile's name as it is."""
    return _CONTROLLERS.get(profile.lower(), profile)


def plateau_cell(entry: dict[str, Any], units: Units) -> str:
    """The plateau as a table shows it; a curve without one says why
    (``40.35 (no plateau: rising)``)."""
    shown = f"{units.convert(entry['plateau']):.2f}"
    if entry.get("plateau_reached", True):
        return shown
    return f"{shown} (no plateau: {entry.get('plateau_why') or 'rising'})"


def verdicts_of(doc: dict[str, Any], units: Units = Units.MB) -> list[dict[str, Any]]:
    """Fresh verdicts for ``doc``; the stored ones if the document cannot be assessed again."""
    try:
        return assess(doc, units=units)
    # NotImplementedError: a bus the model does not cover yet (a usb-storage run at SuperSpeed
    # through a VM's uas): the sweep saved it without a verdict, compare must not crash on it.
    except (ValueError, KeyError, TypeError, NotImplementedError) as exc:
        log.warning("%s: cannot assess again (%s); using the stored verdict",
                    doc.get("device"), exc)
        return ceilings_of(doc)


def runs_from_docs(docs: Sequence[dict[str, Any]], sources: Sequence[str],
                   units: Units = Units.MB) -> list[Run]:
    from .multi import expand_multi, is_multi

    flat = [(part, source) for doc, source in zip(docs, sources, strict=True)
            for part in (expand_multi(doc) if is_multi(doc) else [doc])]
    runs = []
    for index, (doc, source) in enumerate(flat):
        label = chr(ord("A") + index) if index < 26 else f"R{index}"
        entries = doc.get("entries") or (verdicts_of(doc, units) if doc.get("bus") else [])
        runs.append(Run(label, source, doc, entries))
    return runs


def load_runs(paths: Sequence[str], units: Units = Units.MB) -> list[Run]:
    """Read result files (one-line ``ValueError`` if one is not a result)."""
    from ..results import load_results

    return runs_from_docs([load_results(p) for p in paths], [str(p) for p in paths], units)


def _setting(entry: dict[str, Any]) -> str:
    parts = [f"{k.upper()} {entry[k]}" for k in ("mps", "mrrs") if entry.get(k)]
    return " ".join(parts) or "-"


def _qd(entry: dict[str, Any]) -> str:
    """``QD1 vs 4: -54 % at 2 KiB, plateau +0 %`` (the shallow queue relative to the deep one)."""
    effect = entry.get("qd_effect")
    if not effect:
        return "-"
    low, high = effect["queue_depths"]
    shown = f"QD{low} vs {high}:"
    if effect.get("low_at_length") and effect.get("at_length"):
        at = effect["low_at_length"] / effect["plateau_high"] - 1
        shown += f" {at * 100:+.0f} % at {format_size(effect['at_length'])},"
    return f"{shown} plateau {-effect['gain'] / (1 + effect['gain']) * 100:+.0f} %"


def comparison_rows(runs: Sequence[Run], units: Units) -> list[tuple[str, ...]]:
    """Header plus one row per run × direction × setting, sorted by direction."""
    rows: list[tuple[str, ...]] = [
        ("direction", "run", "setting", f"plateau {units.label}", f"link model {units.label}",
         "% of model", "% of host profile", "queue depth effect", "verdict")]
    body = []
    for run in runs:
        for e in run.entries:
            profile = e.get("profile_efficiency")
            body.append((
                e["direction"], run.label, _setting(e), plateau_cell(e, units),
                f"{units.convert(e['model']):.2f}", f"{e['efficiency'] * 100:.1f}",
                "-" if profile is None else f"{profile * 100:.1f} ({e.get('profile')})",
                _qd(e), e["verdict"]))
    body.sort(key=lambda r: (r[0], r[2], r[1]))
    return rows + body


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _controller(run: Run) -> str | None:
    for hop in run.doc.get("topology") or []:
        if "host-controller" in str(hop.get("kind", "")):
            return hop.get("driver") or hop.get("name")
    return None


def _link_of(run: Run) -> str | None:
    bus = run.doc.get("bus") or {}
    if bus.get("kind") == PCIE.kind:
        return f"{bus.get('speed')} x{bus.get('width')}"
    return None


def plateau_spread(run: Run, entry: dict[str, Any]) -> float:
    """The widest repeat spread (± half the range, bytes/s) among ``run``'s plateau points of
    ``entry``'s direction and setting; 0 when the points do not say."""
    lengths = set(entry.get("plateau_lengths") or [])
    spreads = [point_spread(p) for p in run.doc.get("points") or []
               if p.get("direction") == entry["direction"] and p.get("mps") == entry.get("mps")
               and p.get("queue_depth") == entry.get("queue_depth")
               and (not lengths or p.get("length") in lengths)]
    return max(spreads, default=0.0)


def differences(runs: Sequence[Run], units: Units = Units.MB) -> list[str]:
    """Sentences naming what sets each run apart, best run per direction as the reference."""
    # A multi-target run's sums (report/multi.py) are the sum of the others: no reference.
    runs = [run for run in runs if not run.doc.get("sum_of_targets")]
    out: list[str] = []
    # The reference for an entry is the best run at the same direction and setting.
    best: dict[tuple[str, str], tuple[float, Run]] = {}
    for run in runs:
        for e in run.entries:
            key = (e["direction"], _setting(e))
            if key not in best or e["plateau"] > best[key][0]:
                best[key] = (e["plateau"], run)
    for run in runs:
        said: set[str] = set()

        def say(text: str, run: Run = run, said: set[str] = said) -> None:
            if text not in said:
                said.add(text)
                out.append(f"{run.label}: {text}")

        bus = run.doc.get("bus") or {}
        for hop in run.doc.get("topology") or []:
            for note in hop_findings(hop):
                if "below capability" in note:
                    say(note)
                elif "although it supports" in note:
                    say(f"{hop_field(hop, 'name') or ''} {note}")
        for e in run.entries:
            top, top_run = best[(e["direction"], _setting(e))]
            # A gap is a difference only beyond both runs' repeat spreads (docs/DESIGN.md §2.4).
            gap = top - e["plateau"]
            spreads = (plateau_spread(run, e), plateau_spread(top_run, e))
            material = top_run is not run and e["plateau"] < 0.97 * top
            behind = material and gap > max(spreads)
            if material and not behind:
                say(f"{e['direction']}: {units.format(e['plateau'])} vs {top_run.label}'s "
                    f"{units.format(top)} is within the repeats' spread (± "
                    f"{units.format(spreads[0])}, ± {units.format(spreads[1])}): not a "
                    "difference")
            where = f"{e['direction']}" + (f" {_setting(e)}" if _setting(e) != "-" else "")
            evidence = e.get("evidence") or {}
            if e["verdict"] == "host-limited":
                profile = e.get("profile") or bus.get("host_profile")
                driver = _controller(run)
                name = (f"{controller_name(profile)} controller" if profile
                        else "host controller")
                if driver and not driver.startswith("busprobe.sim"):
                    name += f" (driver {driver})"
                tmax = evidence.get("tokens_max_uframe")
                say(name + (f", {tmax} packets per microframe" if tmax else ""))
                say(f"{where}: host-limited at {units.format(e['plateau'])} while the bus "
                    f"allows {units.format(e['model'])}")
            elif e["verdict"] == "upstream-limited":
                say(f"{where}: upstream-limited at {units.format(e['plateau'])} while the link "
                    f"model allows {units.format(e['model'])}")
            elif e["verdict"] == "device-limited":
                say(f"{where}: DEVICE-LIMITED at {units.format(e['plateau'])} — "
                    f"{e['explanation']}")
            if behind:
                say(f"{where}: {(1 - e['plateau'] / top) * 100:.1f} % below {top_run.label} "
                    f"({units.format(e['plateau'])}, {e['verdict']}, vs {units.format(top)}; "
                    f"{top_run.label} is {(top / e['plateau'] - 1) * 100:.1f} % faster)")
            if behind and top_run is not run:
                link, top_link = _link_of(run), _link_of(top_run)
                if link and top_link and link != top_link:
                    say(f"link {link} where {top_run.label} has {top_link}")
    return out


def _framing_note(doc: Mapping[str, Any]) -> str:
    protocol = protocol_of(doc)
    return "" if protocol == Framing.STREAM else f", protocol {protocol}"


def format_comparison(runs: Sequence[Run], units: Units = Units.MB) -> str:
    """The text ``busprobe compare`` prints."""
    lines = [f"{run.label} = {run.source} ({run.doc.get('device', '?')}{_framing_note(run.doc)})"
             for run in runs]
    lines.append(f"throughput in {units.label} ({'10^6' if units is Units.MB else '2^20'} B/s)")
    lines.append("")
    lines += _table(comparison_rows(runs, units))
    diffs = differences(runs, units)
    if diffs:
        lines += ["", "What explains the differences:"]
        lines += [f"  {d}" for d in diffs]
    for title, rows, notes in [*bot_overhead_sections(runs, units),
                               *storage_sections(runs, units)]:
        lines += ["", title, *(_table(rows) if rows else []), *(f"  {n}" for n in notes)]
    incomplete = [run for run in runs if not run.doc.get("complete", True)]
    for run in incomplete:
        lines.append(f"!! {run.label} is INCOMPLETE: {run.doc.get('error')}")
    return "\n".join(lines)
