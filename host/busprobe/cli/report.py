"""``busprobe report A.json [B.json ...] -o report.html``: one self-contained HTML page
(verdicts, comparison, plots embedded as PNG, topology), units stated.

``--store [URL]`` reports stored runs instead (all, or those the filters name); with
``--group-by HOP`` the page is the lab's: the grouped table and an overlay plot per group
(busprobe.report.lab)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..report.compare import Run, load_runs
from ..report.html import write_report
from ..result_file import check_writable, is_stdout
from ..units import Units
from .store_options import add_stored_runs, check_sources, run_filter

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("report", help="write a self-contained HTML report",
                            description=__doc__)
    parser.add_argument("results", nargs="*", metavar="RESULT.json",
                        help="result files written by busprobe sweep --json")
    add_stored_runs(parser)
    parser.add_argument("-o", "--output", required=True, metavar="FILE.html",
                        help="the page ('-': stdout)")
    parser.add_argument("--units", default="mb", help="mb (10^6 B/s, default) or mib (2^20 B/s)")
    parser.set_defaults(func=run)


def _check_output(output: str, inputs: list[str]) -> None:
    """Refuse, before reading anything, an output that would replace an input or a folder."""
    target = Path(output)
    if target.is_dir():
        raise ValueError(f"-o {output} is a directory; name the HTML file, e.g. "
                         f"{target / 'report.html'}")
    check_writable(output)
    if is_stdout(output):
        return
    for name in inputs:
        if Path(name).exists() and target.exists() and target.samefile(name):
            raise ValueError(f"-o {output} is one of the results being reported; "
                             "choose another file name")


def run(args: argparse.Namespace) -> int:
    units = Units.parse(args.units)
    check_sources(args)
    _check_output(args.output, args.results)
    if args.store is not None:
        runs = _stored(args, units)
    else:
        runs = load_runs(args.results, units)
        write_report(runs, args.output, units=units)
    print(f"report: {'stdout' if is_stdout(args.output) else args.output} ({len(runs)} "
          f"run{'s' if len(runs) != 1 else ''}, {units.label})",
          file=sys.stderr if is_stdout(args.output) else sys.stdout)
    return 0


def _stored(args: argparse.Namespace, units: Units) -> list[Run]:
    """Write the page of the stored runs: the lab's, grouped, with ``--group-by``."""
    from ..report.fleet import stored_runs
    from ..store import open_store
    from ..store.groups import group_runs

    with open_store(args.store or None) as store:
        selection = run_filter(args)
        runs = stored_runs(store, selection, units, stored_verdicts=bool(args.group_by))
        if not args.group_by:
            write_report(runs, args.output, units=units)
            return runs
        groups = group_runs(store, args.group_by, selection)
    from ..report.lab import write_lab

    write_lab(groups, runs, args.output, units=units)
    return runs
