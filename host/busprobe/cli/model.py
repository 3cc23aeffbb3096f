"""``busprobe model``: the closed-form ceiling(s) of a bus configuration, with the derivation.

The bus is the selector's description (:func:`busprobe.targets.describe`, the one a sweep of
the same selector uses): simulated targets from their options (no simulator starts), real devices
from sysfs. ``--mps``/``--mrrs`` override or list PCIe settings, ``--length`` and
``--queue-depth`` add the per-transfer term, ``--formula`` prints each derivation.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

from .. import buses, targets
from ..lengths import parse_size
from ..model import Ceiling, ceiling_for, link_ceiling
from ..protocol.names import Direction, Framing
from ..result_file import check_writable, is_stdout, write_result
from ..result_schema import PROTOCOLS
from ..transport import BusDescription
from ..units import Units

__all__ = ["register", "run", "describe_bus"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("model", help="closed-form throughput ceiling(s) for a bus",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", required=True, metavar="SEL",
                        help=buses.selector_syntax())
    parser.add_argument("--direction", help="only this direction (in/out, write/read)")
    parser.add_argument("--mps", help="PCIe Max Payload Size(s), e.g. 128,256,512")
    parser.add_argument("--mrrs", help="PCIe Max Read Request Size(s), e.g. 512")
    parser.add_argument("--length", help="transfer length (K/M suffixes) for the per-transfer term")
    parser.add_argument("--queue-depth", type=int, help="transfers outstanding")
    parser.add_argument("--protocol", default="stream",
                        help="stream (default); bot: USB mass storage Bulk-Only Transport, "
                             "CBW, data and CSW per transfer; uas: USB Attached SCSI, one "
                             "command per transfer, --queue-depth outstanding (with bulk "
                             "streams at SuperSpeed); both need --length")
    parser.add_argument("--formula", action="store_true", help="show each derivation")
    parser.add_argument("--units", default="mb", help="mb (10^6 B/s, default) or mib (2^20 B/s)")
    parser.add_argument("--json", nargs="?", const="-", metavar="FILE",
                        help="the ceilings as JSON, to FILE or (no FILE, or '-') to stdout")
    parser.add_argument("--sysfs-root", default="/sys", help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def _sizes(text: str | None, name: str) -> list[int | None]:
    if not text:
        return [None]
    try:
        return [parse_size(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise ValueError(f"--{name}: {exc}") from None


def describe_bus(bus: BusDescription) -> str:
    """One line naming the configuration: its bus row's describer, or kind and speed."""
    describe = buses.by_kind(bus.kind).describe
    return buses.load(describe)(bus) if describe else f"{bus.kind} {bus.speed}"


def _together(target: targets.TargetDescription, bus: BusDescription,
              direction: str) -> Ceiling | None:
    """The ceiling of a simulated group's targets together, where its row models it."""
    spec = target.spec
    if not (target.simulated and spec.sim_together):
        return None
    return buses.load(spec.sim_together)(target.options, bus, direction)


def run(args: argparse.Namespace) -> int:
    units = Units.parse(args.units)
    check_writable(args.json)
    target = targets.describe(args.device, sysfs_root=args.sysfs_root)
    base = target.require_bus()
    directions = target.spec.directions
    if args.direction:
        if args.direction not in directions:
            raise ValueError(f"direction '{args.direction}' does not exist on {base.kind} "
                             f"(use {' or '.join(directions)})")
        directions = (args.direction,)
    if (args.mps and "mps" not in target.spec.settings) or (
            args.mrrs and "mrrs" not in target.spec.settings):
        raise ValueError("--mps/--mrrs apply to PCIe devices only")
    length = parse_size(args.length) if args.length else None
    if args.protocol not in PROTOCOLS:
        raise ValueError(f"--protocol must be one of {', '.join(PROTOCOLS)}, "
                         f"not '{args.protocol}'")
    if args.protocol != Framing.STREAM:
        # BOT and UAS frame whole commands: the bus's row says which it has a model of.
        if args.protocol not in buses.by_kind(base.kind).framings:
            raise ValueError(f"--protocol {args.protocol} is USB mass storage framing; "
                             f"{args.device} is a {target.spec.family} device")
        if length is None:
            raise ValueError(f"--protocol {args.protocol} needs --length: "
                             f"{args.protocol.upper()}'s cost is per command")
        base = replace(base, protocol=args.protocol)
        directions = tuple(d for d in directions if d in (Direction.IN, Direction.OUT))
        if not directions:
            raise ValueError(f"--protocol {args.protocol} moves data in or out, not loopback")
    out: list[dict] = []
    lines: list[str] = []
    for key, values in (("mps", _sizes(args.mps, "mps")), ("mrrs", _sizes(args.mrrs, "mrrs"))):
        for value in values:
            if value is not None:  # what the spec and the design allow, as sweep refuses
                targets.check_setting(target, key, value)
    for mps in _sizes(args.mps, "mps"):
        for mrrs in _sizes(args.mrrs, "mrrs"):
            bus = replace(base, mps=mps or base.mps, mrrs=mrrs or base.mrrs)
            lines.append(f"{args.device}: {describe_bus(bus)}")
            for direction in directions:
                ceiling = ceiling_for(bus, direction, length=length,
                                      queue_depth=args.queue_depth)
                link = link_ceiling(bus, direction)
                entry = {"direction": direction, "mps": bus.mps, "mrrs": bus.mrrs,
                         "ceiling": ceiling.to_json(), "link": link.to_json()}
                together = _together(target, bus, direction)
                if together is not None:
                    entry["together"] = together.to_json()
                out.append(entry)
                line = f"  {direction:>8}: {units.format(ceiling.throughput)}  ({ceiling.model})"
                if link.throughput != ceiling.throughput and length is None:
                    line += f"; the link alone allows {units.format(link.throughput)}"
                lines.append(line)
                if args.formula:
                    lines += [f"         {step}" for step in ceiling.formula.splitlines()]
                    if link.formula != ceiling.formula and length is None:
                        lines.append("         link model:")
                        lines += [f"           {step}" for step in link.formula.splitlines()]
                if together is not None:
                    lines.append(f"  {'together':>8}: {units.format(together.throughput)}  "
                                 f"({together.model})")
                    if args.formula:
                        lines += [f"         {step}" for step in together.formula.splitlines()]
    if args.json:
        write_result(args.json, json.dumps({"device": args.device, "bus": base.to_json(),
                                            "units": "bytes/s", "ceilings": out}, indent=1)
                     + "\n")
    if not is_stdout(args.json):
        print("\n".join(lines))
    return 0
