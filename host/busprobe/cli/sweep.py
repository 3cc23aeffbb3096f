"""``busprobe sweep``: measure throughput over lengths, queue depths, directions and bus settings.

Everything the user typed is checked before the device is touched. Whatever happens during the
run (device unplugged, timeout, Ctrl-C), the points measured so far are written to the requested
JSON/CSV/plot with ``"complete": false`` and the reason, then the error ends the run in one line.
Exit status: 0 clean, 1 when any point had data errors, 2 on an error, 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from .. import buses, limits, targets
from ..lengths import default_lengths, format_size, parse_counts, parse_lengths, parse_size
from ..plot import plot_results
from ..protocol.names import Direction, Framing
from ..protocol.patterns import Pattern
from ..result_file import ResultWriteError, check_writable, is_stdout
from ..results import finish_document, format_table, new_document, write_csv, write_json
from ..stats import MIN_REPEATS
from ..stdout_guard import stdout_to_stderr
from ..sweep import PointSpec, Sweep, SweepPlan
from ..transport import BusDescription, InvalidRequest, Transport, TransportError
from ..units import Units
from .store_options import add_store

__all__ = ["register", "run", "expand_directions"]

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("sweep", help="measure throughput over a ladder of transfer lengths",
                            description="Measure throughput over transfer lengths, queue depths, "
                                        "directions and bus settings; every byte is checked.")
    parser.add_argument("--device", required=True, metavar="SEL", action="append",
                        help=buses.selector_syntax() + "; repeat it (or sim:pcie?endpoints=N, "
                        "sim:usb2?devices=2) "
                        "to sweep several targets alone and then together")
    parser.add_argument("--direction", default="both",
                        help="in|out|write|read|loopback, both (the two streaming directions) or "
                             "all; comma list allowed (default: both)")
    parser.add_argument("--lengths", help="e.g. 512,4096 or 512..4M (powers of two); default "
                                          "512..4M for USB, 256..4M for PCIe (simulated "
                                          "targets stop lower)")
    parser.add_argument("--queue-depth", help="transfers kept outstanding, e.g. 1,4,8")
    parser.add_argument("--repeat", type=int, default=MIN_REPEATS,
                        help=f"repeats per point, at least {MIN_REPEATS} (default {MIN_REPEATS})")
    parser.add_argument("--mps", help="PCIe Max Payload Size values to sweep, e.g. 128,256")
    parser.add_argument("--mrrs", help="PCIe Max Read Request Size values to sweep")
    parser.add_argument("--min-bytes", metavar="SIZE",
                        help="bytes a repeat moves at least, e.g. 64K (default: the device's: "
                             "4M on hardware, less in simulation); a quick look, or a slow host "
                             "such as an emulator")
    parser.add_argument("--min-transfers", metavar="N", type=int,
                        help="transfers a repeat makes at least (default: the device's, 8); "
                             "never fewer than the queue depth; fewer for a slow host such as "
                             "an emulator, where a repeat's volume says nothing")
    parser.add_argument("--pattern", default="counter", help="counter or prbs31")
    parser.add_argument("--protocol", default="stream",
                        help="stream (bare bulk transfers, default), bot (USB mass storage "
                             "Bulk-Only Transport: CBW, data, CSW per transfer, queue depth 1; "
                             "usb2-full's framer or the usb2-storage null disk) or uas (USB "
                             "Attached SCSI on the null disk's alternate 1: command IU, READY, "
                             "data, SENSE IU per transfer, queue depth = tags outstanding); on "
                             "the disk every transfer is a READ(10)/WRITE(10) checked against "
                             "the LBA pattern")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON ('-': stdout)")
    parser.add_argument("--csv", metavar="FILE", help="write one CSV row per point ('-': stdout)")
    parser.add_argument("--plot", metavar="FILE.png",
                        help="plot throughput versus length (PNG, or .svg/.pdf; '-': stdout)")
    parser.add_argument("--units", default="mb", help="mb (10^6 B/s, default) or mib (2^20 B/s)")
    add_store(parser, optional=True)  # store the run as its JSON is written
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--no-device-run", action="store_true",
                        help="PCIe with the SoC's firmware: skip the device-run DMA the sweep "
                             "otherwise measures beside each write/read point")
    parser.add_argument("--allow-config-write", action="store_true",
                        help="real PCIe only, as root: let --mps/--mrrs rewrite Device Control of "
                             "the device and its upstream port (restored on exit)")
    parser.set_defaults(func=run)


def expand_directions(text: str, available: tuple[str, ...]) -> tuple[Direction, ...]:
    """``both`` → the transport's two streaming directions, ``all`` → all of them (parsed into
    :class:`~busprobe.protocol.names.Direction` members here, at the command line)."""
    out: list[Direction] = []
    for item in (t.strip() for t in text.split(",")):
        names = {"both": available[:2], "all": available}.get(item, (item,))
        for name in names:
            if name not in available:
                raise InvalidRequest(f"direction {name!r} is not one of "
                                     f"{', '.join(available)}, both, all")
            if name not in out:
                out.append(Direction.parse(name))
    return tuple(out)


def _settings(args: argparse.Namespace,
              target: targets.TargetDescription) -> tuple[dict[str, int], ...]:
    mps = parse_counts(args.mps, "MPS") if args.mps is not None else [None]
    mrrs = parse_counts(args.mrrs, "MRRS") if args.mrrs is not None else [None]
    wanted = [name for name, given in (("mps", args.mps), ("mrrs", args.mrrs))
              if given is not None]
    if any(name not in target.spec.settings for name in wanted):
        raise InvalidRequest(f"--mps/--mrrs are PCIe settings; {target.text} is a "
                             f"{target.spec.family} device")
    for name, values in (("mps", mps), ("mrrs", mrrs)):
        for value in values:
            if value is not None:
                targets.check_setting(target, name, value)  # the spec's and the design's
    return tuple({k: v for k, v in (("mps", m), ("mrrs", r)) if v is not None}
                 for m in mps for r in mrrs)


def _outputs(args: argparse.Namespace) -> tuple[tuple[str, str, str | None], ...]:
    """``(what, option, path)`` of each result file the run writes."""
    return (("JSON", "--json", args.json), ("CSV", "--csv", args.csv),
            ("plot", "--plot", args.plot))


def _to_stdout(args: argparse.Namespace) -> bool:
    return any(is_stdout(path) for _, _, path in _outputs(args))


@contextlib.contextmanager
def _stdout_guard(args: argparse.Namespace) -> Iterator[None]:
    """With a result on stdout (``--json -``), stdout carries only the data: anything else
    written to file descriptor 1 meanwhile (a simulator build's compiler lines) goes to
    stderr."""
    with stdout_to_stderr() if _to_stdout(args) else contextlib.nullcontext():
        yield


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="run", file=sys.stderr, leave=False, dynamic_ncols=True)


def run(args: argparse.Namespace) -> int:
    if args.min_transfers is not None and not 1 <= args.min_transfers <= Transport.max_transfers:
        raise ValueError(f"--min-transfers must be 1..{Transport.max_transfers}, "
                         f"not {args.min_transfers}")
    if isinstance(args.device, list):
        from .sweep_multi import names_several, run_multi

        if len(args.device) > 1 or names_several(args.device[0]):
            if args.store is not None:
                raise ValueError("--store takes one target's run; store a several-target "
                                 "sweep's files with busprobe store push")
            return run_multi(args, expand_directions)
        args.device = args.device[0]
    # 1. Everything typed, checked before the device is opened.
    units = Units.parse(args.units)
    pattern = Pattern.parse(args.pattern)
    # Described once, before anything is built: a bad selector fails here, as in model/topology.
    target = targets.describe(args.device, sysfs_root=None)
    # An empty value is a mistake, not "use the default": only an absent option means that.
    lengths = parse_lengths(args.lengths) if args.lengths is not None else None
    depths = parse_counts(args.queue_depth, "queue depth") if args.queue_depth is not None \
        else None
    on_stdout = [option for _, option, path in _outputs(args) if is_stdout(path)]
    if len(on_stdout) > 1:
        each = "both" if len(on_stdout) == 2 else "all"
        raise ValueError(f"{' and '.join(on_stdout)} would {each} write to stdout; send all "
                         "but one to a file")
    settings = _settings(args, target)
    min_bytes = parse_size(args.min_bytes) if args.min_bytes is not None else None
    if args.repeat < MIN_REPEATS:
        raise ValueError(f"--repeat must be at least {MIN_REPEATS}, not {args.repeat}")
    # The bounds of what may be asked (busprobe.limits), before anything is built or opened.
    limits.check_repeat(args.repeat)
    limits.check_lengths(lengths or ())
    limits.check_queue_depths(depths or ())
    limits.check_queued(lengths or (), depths or ())
    if min_bytes is not None:
        limits.check_point_bytes(args.repeat * min_bytes, simulated=target.simulated,
                                 what=f"--min-bytes {args.min_bytes} × {args.repeat} repeats")
    table_out: TextIO = sys.stderr if _to_stdout(args) else sys.stdout
    for _, _, path in _outputs(args):
        check_writable(path)
    if args.store is not None:  # a bad URL or a missing extra fails before the measurement
        from ..store.url import resolve

        resolve(args.store or None)

    if args.allow_config_write and (target.simulated or target.spec is not buses.PCIE):
        raise ValueError("--allow-config-write applies to real PCIe devices "
                         f"({buses.PCIE.real_syntax})")
    transport = targets.open_transport(target)
    transport.set_protocol(args.protocol)
    if min_bytes is not None:
        transport.min_bytes = min_bytes
    if args.min_transfers is not None:
        transport.min_transfers = args.min_transfers
    if args.allow_config_write:
        transport.platform.allow_config_write = True  # type: ignore[attr-defined]  # VfioPlatform
    directions = expand_directions(args.direction, transport.directions)
    # Check what we can before paying for open (a simulator build): with the lengths asked and
    # the queue depths asked or, for a simulated target (whose selector says what it is), its
    # bus's defaults: a simulated null disk asked for streams is refused before it is built.
    early_depths = depths or (_default_depths(transport.bus) if target.simulated else None)
    if lengths and early_depths:
        SweepPlan(directions, tuple(lengths), tuple(early_depths), args.repeat, settings,
                  pattern).validate(transport, simulated=target.simulated)

    # From here on the run can fail (a simulator that dies or is stopped, a device unplugged,
    # Ctrl-C): whatever is known by then is saved (issue 47, item 7).
    doc = new_document(args.device, units=units)
    doc["bus"] = _selected_bus(target)
    doc["plan"] = _asked_plan(directions, lengths, depths, args.repeat, settings, pattern)
    measured = _Measured()
    try:
        with _stdout_guard(args):
            transport.open()
        try:
            plan = _plan(transport, directions, lengths, depths, args.repeat, settings, pattern)
            plan.validate(transport, simulated=target.simulated)
            print(_describe(args.device, transport.bus, plan, transport), file=sys.stderr,
                  flush=True)
            if doc["host"].get("emulated"):
                print(f"note: this computer is emulated ({doc['host']['emulated']}): every "
                      "figure is the emulator's, not a host controller's", file=sys.stderr,
                      flush=True)
            doc["bus"] = transport.bus.to_json()
            doc["topology"] = _topology(transport)
            doc["plan"] = _plan_json(plan, transport)
            _measure(transport, plan, args, measured)
        finally:
            try:
                transport.close()
            except TransportError as exc:  # the device may be gone already; the data is saved
                log.warning("closing %s: %s", args.device, exc)
    except (TransportError, KeyboardInterrupt) as exc:
        if isinstance(exc, InvalidRequest) and measured.sweep is None:
            raise  # a request the device refused before measuring: a mistake, nothing ran
        reason = (str(exc) or "interrupted (Ctrl-C)") if isinstance(exc, KeyboardInterrupt) \
            else str(exc)
        doc["points"] = measured.points_json()
        # The run's own end is the error to report; a result that could not be saved as well
        # gets its line first.
        for failure in _save(finish_document(doc, error=f"{type(exc).__name__}: {reason}"),
                             args, units, table_out):
            print(f"busprobe: error: {failure}", file=sys.stderr)
        raise
    doc["points"] = measured.points_json()
    failures = _save(finish_document(doc), args, units, table_out)
    if failures:
        raise ResultWriteError("; ".join(failures))
    return 1 if doc["errors"] else 0


class _Measured:
    """The sweep of a run, once it started: where the points measured so far are, whenever
    the run ends.

    Attributes
    ----------
    sweep : Sweep or None
        The sweep; None while the device is being opened and the plan made.
    """

    sweep: Sweep | None = None

    def points_json(self) -> list[dict[str, Any]]:
        return [p.to_json() for p in self.sweep.points] if self.sweep is not None else []


def _selected_bus(target: targets.TargetDescription) -> dict[str, Any]:
    """The bus as the selector describes it, until the opened device says what it is."""
    return target.bus.to_json() if target.bus is not None else {"kind": target.spec.kind}


def _asked_plan(directions: tuple[str, ...], lengths: list[int] | None,
                depths: list[int] | None, repeat: int, settings: tuple[dict[str, int], ...],
                pattern: Pattern) -> dict[str, Any]:
    """The plan as asked, before the device is open (lengths and queue depths the device's
    defaults fill in are None until then)."""
    return {"directions": list(directions), "lengths": lengths, "queue_depths": depths,
            "repeat": repeat, "pattern": pattern.name.lower(),
            "settings": [dict(s) for s in settings]}


def _plan(transport: Transport, directions: tuple[str, ...], lengths: list[int] | None,
          depths: list[int] | None, repeat: int, settings: tuple[dict[str, int], ...],
          pattern: Pattern) -> SweepPlan:
    """The plan, with the opened device's defaults where nothing was asked."""
    bus = transport.bus
    return SweepPlan(
        directions,
        tuple(lengths or default_lengths(bus.kind, transport.default_max_length)),
        tuple(depths or _default_depths(bus)),
        repeat, settings, pattern)


def _default_depths(bus: BusDescription) -> tuple[int, ...]:
    """The queue depths a sweep of ``bus`` runs when none are asked: busprobe's own BOT framing
    has no queue (block:'s driver queues by itself); UAS's tags do."""
    if bus.protocol == Framing.BOT and bus.kind != "usb-storage":
        return (1,)
    return buses.by_kind(bus.kind).default_queue_depths


def _measure(transport: Transport, plan: SweepPlan, args: argparse.Namespace,
             measured: _Measured) -> None:
    """Run the sweep; its points stay in ``measured`` whatever ends it."""
    specs = plan.points()
    bar = _progress(len(specs) * plan.repeat,
                    not args.no_progress and sys.stderr.isatty() and len(specs) > 1)

    def on_repeat(spec: PointSpec, index: int) -> None:
        if bar is not None:
            bar.set_description(f"{spec.direction} {format_size(spec.length)} "
                                f"qd {spec.queue_depth}", refresh=False)
            bar.update()

    measured.sweep = Sweep(transport, plan, on_repeat=on_repeat,
                           device_run=not args.no_device_run)
    try:
        with _stdout_guard(args):
            measured.sweep.run(specs)
    finally:
        if bar is not None:
            bar.close()


def _save(doc: dict[str, Any], args: argparse.Namespace, units: Units,
          table_out: TextIO) -> list[str]:
    """Print the table and write every result file asked for; the one-line reason of each that
    could not be written (the others are written all the same). The JSON document is written
    whenever it was asked, also with no point (what is known: the error, the target, the
    plan); a CSV table or a plot needs points."""
    if doc["points"]:
        print(format_table(doc, units), file=table_out, flush=True)
    else:
        print(f"!! INCOMPLETE: {doc['error']} (no point was finished)", file=table_out)
    writers = {"JSON": lambda path: write_json(doc, path),
               "CSV": lambda path: write_csv(doc, path),
               "plot": lambda path: plot_results([doc], path, units=units)}
    failures = []
    json_file = None  # the JSON written to a file: where an unstored run is kept
    for what, _, path in _outputs(args):
        if not path:
            continue
        if not doc["points"] and what != "JSON":
            print(f"{what}: not written (no point)", file=table_out)
            continue
        try:
            writers[what](path)
        except ResultWriteError as exc:
            failures.append(str(exc))
            continue
        if not is_stdout(path):
            print(f"{what}: {path}", file=table_out)
            json_file = path if what == "JSON" else json_file
    if args.store is not None:
        from .store_push import push_swept

        failure = push_swept(doc, args.store, json_file)
        if failure:
            failures.append(failure)
    return failures


def _describe(device: str, bus: BusDescription, plan: SweepPlan, transport: Transport) -> str:
    host = f", host {bus.host_profile}" if bus.host_profile else ""
    host += f", protocol {bus.protocol}" if bus.protocol != Framing.STREAM else ""
    lengths = ",".join(format_size(n) for n in plan.lengths)
    return (f"sweeping {device} ({bus.kind} {bus.speed}{host}): {'/'.join(plan.directions)}, "
            f"lengths {lengths}, queue depth {','.join(map(str, plan.queue_depths))}, "
            f"{plan.repeat} repeats of >= {transport.min_transfers} transfers and "
            f"{format_size(transport.min_bytes)}B each")


def _topology(transport: Transport) -> list[dict[str, Any]]:
    try:
        return transport.topology()
    except (TransportError, OSError) as exc:  # a missing topology must not cost the measurement
        log.warning("no topology: %s", exc)
        return []


def _plan_json(plan: SweepPlan, transport: Transport) -> dict[str, Any]:
    return {"directions": list(plan.directions), "lengths": list(plan.lengths),
            "queue_depths": list(plan.queue_depths), "repeat": plan.repeat,
            "pattern": plan.pattern.name.lower(), "settings": [dict(s) for s in plan.settings],
            "min_transfers": transport.min_transfers, "min_bytes": transport.min_bytes,
            "max_transfers": transport.max_transfers,
            "min_bus_seconds": transport.min_bus_seconds,
            "max_bus_seconds": transport.max_bus_seconds}
