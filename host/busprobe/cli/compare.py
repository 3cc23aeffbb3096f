"""``busprobe compare A.json B.json ...``: per-direction table (plateau, % of model, queue depth
effect, verdict), the differences that explain the gap, and an optional overlay plot."""

from __future__ import annotations

import argparse
import sys

from ..report.compare import format_comparison, load_runs
from ..result_file import check_writable, is_stdout
from ..units import Units

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("compare", help="compare result files and explain the differences",
                            description=__doc__)
    parser.add_argument("results", nargs="+", metavar="RESULT.json",
                        help="result files written by busprobe sweep --json")
    parser.add_argument("--plot", metavar="FILE.png",
                        help="write an overlay plot (PNG; '-': stdout, the text then goes to "
                             "stderr)")
    parser.add_argument("--units", default="mb", help="mb (10^6 B/s, default) or mib (2^20 B/s)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    units = Units.parse(args.units)
    check_writable(args.plot)
    human = sys.stderr if is_stdout(args.plot) else sys.stdout
    runs = load_runs(args.results, units)
    print(format_comparison(runs, units), file=human, flush=True)
    if args.plot:
        from ..report.plots import write_overlay  # matplotlib only when a plot is asked for

        write_overlay(runs, args.plot, units=units)
        if not is_stdout(args.plot):
            print(f"overlay plot: {args.plot}", file=human)
    return 0
