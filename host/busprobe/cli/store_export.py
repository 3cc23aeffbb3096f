"""``busprobe store export RUN_ID -o FILE``: a stored run's result document, byte for byte as it
was pushed (a unique leading part of the id is enough)."""

from __future__ import annotations

import argparse
import sys

from ..result_file import check_writable, is_stdout, write_result
from .store_options import add_store

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("export", help="write a stored run's result document",
                            description=__doc__)
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="the result file ('-': stdout)")
    add_store(parser, optional=False)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..store import open_store

    check_writable(args.output)
    with open_store(args.store or None) as store:
        raw = store.export(args.run_id)
    write_result(args.output, raw)
    if not is_stdout(args.output):
        print(f"exported {args.run_id} to {args.output}", file=sys.stderr)
    return 0
