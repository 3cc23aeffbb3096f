"""``busprobe compare A.json B.json ...``: per-direction table (plateau, % of model, queue depth
effect, verdict), the differences that explain the gap, and an optional overlay plot.

``--store [URL]`` compares stored runs instead (all, or those the filters name); with
``--group-by HOP`` it prints the fleet view: one line per group of runs that went through the
same controller, root port, chipset path, kernel or host (busprobe.report.fleet)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..report.compare import Run, format_comparison, load_runs
from ..result_file import check_writable, is_stdout
from ..units import Units
from .store_options import add_stored_runs, check_sources, run_filter

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("compare", help="compare result files and explain the differences",
                            description=__doc__)
    parser.add_argument("results", nargs="*", metavar="RESULT.json",
                        help="result files written by busprobe sweep --json")
    add_stored_runs(parser)
    parser.add_argument("--plot", metavar="FILE.png",
                        help="write an overlay plot (PNG; '-': stdout, the text then goes to "
                             "stderr)")
    parser.add_argument("--units", default="mb", help="mb (10^6 B/s, default) or mib (2^20 B/s)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    units = Units.parse(args.units)
    check_writable(args.plot)
    human = sys.stderr if is_stdout(args.plot) else sys.stdout
    check_sources(args)
    if args.store is not None:
        runs = _stored(args, units, human)
        if runs is None:
            return 0
    else:
        runs = load_runs(args.results, units)
        print(format_comparison(runs, units), file=human, flush=True)
    if args.plot:
        from ..report.plots import write_overlay  # matplotlib only when a plot is asked for

        write_overlay(runs, args.plot, units=units)
        if not is_stdout(args.plot):
            print(f"overlay plot: {args.plot}", file=human)
    return 0


def _stored(args: argparse.Namespace, units: Units, human: Any) -> list[Run] | None:
    """Print the comparison of the stored runs, or their groups (then None: no plot)."""
    from ..report.fleet import format_groups, stored_runs
    from ..store import open_store
    from ..store.groups import group_runs

    if args.group_by and args.plot:
        raise ValueError("--plot takes the runs one by one; for a plot per group use "
                         "busprobe report --store --group-by HOP -o lab.html")
    with open_store(args.store or None) as store:
        if args.group_by:
            print(format_groups(group_runs(store, args.group_by, run_filter(args)), units),
                  file=human, flush=True)
            return None
        runs = stored_runs(store, run_filter(args), units)
    print(format_comparison(runs, units), file=human, flush=True)
    return runs
