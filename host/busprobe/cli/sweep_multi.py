"""``busprobe sweep --device A --device B ...``: the same ladder on every target alone, then all
together, and whether something they share limits them (:mod:`busprobe.sweep_multi`,
:mod:`busprobe.verdict.shared`).

One selector may stand for several targets that share one simulation
(``sim:pcie?endpoints=2&cap=...``: two endpoints behind one switch;
``sim:usb2?devices=2&attach=hub``: two USB 2.0 devices behind one hub); they are numbered
``#0``, ``#1``. The result document holds, per target, its points alone and together, and per
point the ``sum_throughput`` together beside the ``sum_alone``; then the verdict.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from typing import Any

from .. import buses, targets
from ..above_link import mark, point_note, sum_bound, sum_note
from ..lengths import default_lengths, format_size, parse_counts, parse_lengths, parse_size
from ..protocol.names import Framing
from ..protocol.patterns import Pattern
from ..result_file import ResultWriteError, check_writable, is_stdout
from ..results import finish_document, new_document, write_json
from ..stdout_guard import stdout_to_stderr
from ..sweep import SweepPlan
from ..sweep_multi import MultiSweep, TargetRun
from ..together import SharedClock
from ..topology.shared import shared_hop
from ..transport import InvalidRequest, Transport, TransportError
from ..units import Units
from ..verdict.shared import assess_shared

__all__ = ["run_multi", "format_multi_table", "open_targets", "names_several"]


def _group_size(description: targets.TargetDescription) -> int:
    """How many targets a simulated selector stands for (``endpoints=N``, ``devices=N``)."""
    spec = description.spec
    if not (description.simulated and spec.sim_group):
        return 1
    return int((description.options or {}).get(spec.sim_group_option, 1))


def names_several(selector: str) -> bool:
    """Whether ``selector`` alone stands for several targets in one simulation."""
    return _group_size(targets.describe(selector, sysfs_root=None)) > 1


def open_targets(selectors: list[str]
                 ) -> tuple[list[tuple[str, Transport]], Any, SharedClock | None, bool]:
    """Build (not open) every target: ``(name, transport)`` pairs, the group that opens a
    shared simulation (or None), its clock (None: the wall clock) and whether all targets
    share one clock."""
    if len(set(selectors)) != len(selectors):
        twice = next(s for s in selectors if selectors.count(s) > 1)
        raise InvalidRequest(f"--device {twice} is named twice: a target cannot run together "
                             "with itself")
    descriptions = [targets.describe(s, sysfs_root=None) for s in selectors]
    grouped = [d for d in descriptions if _group_size(d) > 1]
    if grouped:
        if len(descriptions) > 1:
            raise InvalidRequest(f"{grouped[0].text} already names several targets in one "
                                 "simulation; give it alone")
        group = buses.load(grouped[0].spec.sim_group, buses.SIM_EXTRA_HINT)(grouped[0])
        return group.targets, group, group.clock, True
    simulated = [d.simulated for d in descriptions]
    if any(simulated) and not all(simulated):
        raise InvalidRequest("a simulated and a real target cannot run together (their clocks "
                             "differ); sweep them separately")
    pairs = [(d.text, targets.open_transport(d)) for d in descriptions]
    # Separate simulations each keep their own simulated clock: sums add each one's rate.
    return pairs, None, None, not any(simulated)


def run_multi(args: argparse.Namespace,
              expand_directions: Callable[[str, tuple[str, ...]], tuple[str, ...]]) -> int:
    """The multi-target sweep (``args`` as ``busprobe sweep`` parses them; its
    ``expand_directions``)."""
    units = Units.parse(args.units)
    pattern = Pattern.parse(args.pattern)
    lengths = parse_lengths(args.lengths) if args.lengths is not None else None
    depths = parse_counts(args.queue_depth, "queue depth") if args.queue_depth is not None \
        else None
    min_bytes = parse_size(args.min_bytes) if args.min_bytes is not None else None
    for option in ("csv", "plot", "mps", "mrrs"):
        if getattr(args, option, None) is not None:
            raise InvalidRequest(f"--{option} is for one target; several targets write --json")
    if args.protocol != Framing.STREAM:
        raise InvalidRequest("several targets at once run the stream protocol only")
    check_writable(args.json)
    pairs, group, clock, shared = open_targets(list(args.device))
    for _, transport in pairs:
        if min_bytes is not None:
            transport.min_bytes = min_bytes
        if args.min_transfers is not None:
            transport.min_transfers = args.min_transfers
    doc = new_document(" + ".join(args.device), units=units)
    runs = [TargetRun(name, transport) for name, transport in pairs]
    to_stdout = is_stdout(args.json)  # '-', /dev/stdout, /proc/self/fd/1: the document alone
    out = sys.stderr if to_stdout else sys.stdout
    simulated = group is not None or not shared
    with contextlib.ExitStack() as stack:
        if to_stdout:  # a simulator build's compiler lines must not reach the JSON
            stack.enter_context(stdout_to_stderr())
        if group is not None:
            group.open()
            stack.callback(group.close)
        else:
            for run in runs:
                run.transport.open()
                stack.callback(_close, run.transport)
        first = runs[0].transport
        directions = expand_directions(args.direction,
                                       _common_directions([r.transport for r in runs]))
        plan = SweepPlan(directions, tuple(lengths or default_lengths(
            first.bus.kind, min(r.transport.default_max_length for r in runs))),
            tuple(depths or buses.by_kind(first.bus.kind).default_queue_depths),
            args.repeat, ({},), pattern)
        for run in runs:
            plan.validate(run.transport, simulated=simulated)
        print(f"sweeping {len(runs)} targets alone, then together: "
              f"{'/'.join(plan.directions)}, lengths "
              f"{','.join(format_size(n) for n in plan.lengths)}, queue depth "
              f"{','.join(map(str, plan.queue_depths))}, {plan.repeat} repeats",
              file=sys.stderr, flush=True)
        multi = MultiSweep(runs, plan, clock=clock, shared_clock=shared)
        try:
            multi.run()
        except KeyboardInterrupt:
            doc["error"] = "interrupted (Ctrl-C)"
        _fill(doc, multi, units)
    finish_document(doc, error=doc.get("error") or _lost(runs))
    doc["errors"] = sum(p["errors"] for t in doc["targets"] for phase in ("alone", "together")
                        for p in t[phase])
    print(format_multi_table(doc, units), file=out, flush=True)
    if args.json:
        try:
            write_json(doc, args.json)
        except ResultWriteError as exc:
            print(f"busprobe: error: {exc}", file=sys.stderr)
            return 2
    return 2 if doc["error"] else 1 if doc["errors"] else 0


def _close(transport: Transport) -> None:
    with contextlib.suppress(TransportError):
        transport.close()


def _common_directions(transports: list[Transport]) -> tuple[str, ...]:
    common = tuple(d for d in transports[0].directions
                   if all(d in t.directions for t in transports))
    if not common:
        raise InvalidRequest("the targets have no direction in common")
    return common


def _lost(runs: list[TargetRun]) -> str | None:
    lost = [f"{r.name}: {r.error}" for r in runs if r.error]
    return "; ".join(lost) or None


def _fill(doc: dict[str, Any], multi: MultiSweep, units: Units) -> None:
    runs = multi.targets
    topologies = []
    kinds = []
    doc["targets"] = []
    for run in runs:
        try:
            topology = run.transport.topology()
            bus = run.transport.bus
        except (TransportError, OSError):
            topology, bus = [], None
        topologies.append(topology)
        kinds.append(bus.kind if bus else None)
        doc["targets"].append({
            "device": run.name, "bus": bus.to_json() if bus else None, "topology": topology,
            "alone": [p.to_json() for p in run.alone],
            "together": [p.to_json() for p in run.together], "error": run.error})
    doc["bus"] = doc["targets"][0]["bus"]
    doc["plan"] = {"directions": list(multi.plan.directions),
                   "lengths": list(multi.plan.lengths),
                   "queue_depths": list(multi.plan.queue_depths), "repeat": multi.plan.repeat,
                   "clock": "shared" if multi.shared_clock else "separate"}
    doc["together"] = multi.sums()
    doc["shared"] = assess_shared(doc["together"], topologies, kinds, units)


def _one_bus(doc: dict[str, Any]) -> bool:
    """Whether the document's targets share one bus (a hub, EHCI's root ports)."""
    try:
        hop = shared_hop([t.get("topology") or [] for t in doc["targets"]])
    except ValueError:
        return False
    return bool(hop and hop.get("one_bus"))


def format_multi_table(doc: dict[str, Any], units: Units = Units.MB) -> str:
    """Per point: each target alone and together, the sum together and the sum alone, a figure
    above what the link allows marked (:mod:`busprobe.above_link`) with a line saying why;
    then the verdict lines."""
    names = [t["device"] for t in doc["targets"]]
    head = ["dir", "length", "qd"]
    for i in range(len(names)):
        head += [f"#{i} alone", f"#{i} together"]
    head += ["sum together", "sum alone"]
    lines = ["targets: " + "; ".join(f"#{i} {n}" for i, n in enumerate(names)),
             " | ".join(head)]
    one_bus = _one_bus(doc)
    notes: list[str] = []
    for row in doc["together"]:
        cells = [row["direction"], format_size(row["length"]) + "B", str(row["queue_depth"])]
        together = []
        for i, target in enumerate(doc["targets"]):
            for phase in ("alone", "together"):
                point = next((p for p in target[phase] if p["length"] == row["length"]
                              and p["direction"] == row["direction"]
                              and p["queue_depth"] == row["queue_depth"]), None)
                if point is None:
                    cells.append("-")
                    continue
                cells.append(mark(units.format(point["throughput"]), point["throughput"],
                                  point.get("link_ceiling")))
                notes.append(point_note(point, units, f"#{i} {phase} ") or "")
                if phase == "together":
                    together.append(point)
        bound = sum_bound(together, one_bus) if len(together) == len(doc["targets"]) else None
        cells += [mark(units.format(row["sum_throughput"]), row["sum_throughput"], bound),
                  units.format(row["sum_alone"])]
        if bound is not None:
            notes.append(sum_note(row, bound, one_bus, units) or "")
        lines.append(" | ".join(cells))
    lines += [note for note in notes if note]
    for entry in doc.get("shared", []):
        lines.append(f"verdict {entry['verdict']}: {entry['explanation']}")
    for target in doc["targets"]:
        if target["error"]:
            lines.append(f"!! {target['device']} stopped: {target['error']} (its points so far "
                         "and the others' are kept)")
    if doc.get("errors"):
        lines.append(f"!! {doc['errors']} data errors")
    return "\n".join(lines)
