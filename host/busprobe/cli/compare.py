"""``busprobe compare A.json B.json ...``: per-direction table (plateau, % of model, queue depth
effect, verdict), the differences that explain the gap, and an optional overlay plot."""

from __future__ import annotations

import argparse

from ..report.compare import format_comparison, load_runs
from ..units import Units

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("compare", help="compare result files and explain the differences",
                            description=__doc__)
    parser.add_argument("results", nargs="+", metavar="RESULT.json",
                        help="result files written by busprobe sweep --json")
    parser.add_argument("--plot", metavar="FILE.png", help="write an overlay plot")
    parser.add_argument("--units", default="mb", help="mb (10^6 B/s, default) or mib (2^20 B/s)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    units = Units.parse(args.units)
    runs = load_runs(args.results, units)
    print(format_comparison(runs, units))
    if args.plot:
        from ..report.plots import write_overlay  # matplotlib only when a plot is asked for

        write_overlay(runs, args.plot, units=units)
        print(f"overlay plot: {args.plot}")
    return 0
