"""The options every command that reads or writes the results store shares: ``--store URL``,
the run filters of ``store ls`` (also taken by ``compare`` and ``report``) and ``--group-by``."""

from __future__ import annotations

import argparse
from typing import Any

from ..result_schema import VERDICTS

__all__ = ["add_store", "add_filters", "add_group_by", "add_stored_runs", "check_sources",
           "run_filter", "filtered", "GROUP_BY",
           "DEFAULT"]

#: ``--group-by`` choices (busprobe.store.query.GROUP_COLUMNS has the same keys).
GROUP_BY = ("controller", "root-port", "chipset", "kernel", "host")
#: ``--store`` given without a URL: the default store ($BUSPROBE_STORE, else the user's file).
DEFAULT = ""


def add_store(parser: argparse.ArgumentParser, *, optional: bool) -> None:
    """``--store URL``; with ``optional``, ``--store`` alone means the default store and its
    absence means none."""
    what = ("the results store: sqlite:///PATH or postgresql://USER@HOST/DB (password from "
            "the environment or ~/.pgpass); default $BUSPROBE_STORE, else results.sqlite in "
            "your data directory")
    if optional:
        parser.add_argument("--store", nargs="?", const=DEFAULT, default=None, metavar="URL",
                            help=what)
    else:
        parser.add_argument("--store", default=DEFAULT, metavar="URL", help=what)


def add_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="runs of this host name")
    parser.add_argument("--controller", help="runs whose controller's name contains this")
    parser.add_argument("--bus", help="runs of this bus kind (pcie, usb2-hs, usb3-ss, ...)")
    parser.add_argument("--since", help="runs started since a date/time or an age (7d, 12h)")
    parser.add_argument("--verdict", choices=VERDICTS, metavar="VERDICT",
                        help=f"runs with this verdict: {', '.join(VERDICTS)}")


def add_group_by(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--group-by", choices=GROUP_BY, metavar="HOP",
                        help=f"one line per group of stored runs: {', '.join(GROUP_BY)}")


def run_filter(args: argparse.Namespace) -> Any:
    """The :class:`busprobe.store.query.RunFilter` of the filter options."""
    from ..store.query import RunFilter, parse_since

    return RunFilter(host=args.host, controller=args.controller, bus=args.bus,
                     since=parse_since(args.since) if args.since else None,
                     verdict=args.verdict)


def filtered(args: argparse.Namespace) -> bool:
    """Whether any filter option was given."""
    return any(getattr(args, name) is not None
               for name in ("host", "controller", "bus", "since", "verdict"))


def check_sources(args: argparse.Namespace) -> None:
    """Result files, or ``--store`` (with its filters and ``--group-by``), not both, not none."""
    stored = args.store is not None
    if stored and args.results:
        raise ValueError("give result files or --store, not both (store the files first: "
                         "busprobe store push FILE...)")
    if not stored and not args.results:
        raise ValueError("give result files (RESULT.json ...) or --store [URL]")
    if not stored and (args.group_by or filtered(args)):
        raise ValueError("--group-by, --host, --controller, --bus, --since and --verdict "
                         "select stored runs: add --store [URL]")


def add_stored_runs(parser: argparse.ArgumentParser) -> None:
    """``--store`` (optional), the filters and ``--group-by``: the stored runs ``compare`` and
    ``report`` take instead of files."""
    add_store(parser, optional=True)
    add_filters(parser)
    add_group_by(parser)
