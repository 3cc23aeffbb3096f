"""``busprobe report A.json [B.json ...] -o report.html``: one self-contained HTML page
(verdicts, comparison, plots embedded as PNG, topology), units stated."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..report.compare import load_runs
from ..report.html import write_report
from ..result_file import check_writable, is_stdout
from ..units import Units

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("report", help="write a self-contained HTML report",
                            description=__doc__)
    parser.add_argument("results", nargs="+", metavar="RESULT.json",
                        help="result files written by busprobe sweep --json")
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
    _check_output(args.output, args.results)
    runs = load_runs(args.results, units)
    write_report(runs, args.output, units=units)
    print(f"report: {'stdout' if is_stdout(args.output) else args.output} ({len(runs)} "
          f"run{'s' if len(runs) != 1 else ''}, {units.label})",
          file=sys.stderr if is_stdout(args.output) else sys.stdout)
    return 0
