"""``busprobe store ls [filters] [--json FILE|-]``: the stored runs, newest first, one line each
(id, start, host, bus, device, controller, root port, errors); ``--json -`` puts them on stdout
as a JSON list and nothing else."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC
from typing import Any

from ..result_file import check_writable, is_stdout, write_result
from .store_options import add_filters, add_store, run_filter

__all__ = ["register", "run", "format_runs"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("ls", help="list stored runs", description=__doc__)
    add_filters(parser)
    parser.add_argument("--json", metavar="FILE", help="write the list as JSON ('-': stdout)")
    add_store(parser, optional=False)
    parser.set_defaults(func=run)


def _json_row(row: Any) -> dict[str, Any]:
    out = dict(row._mapping)
    out["run_id"] = str(out["run_id"])
    started = out["started"]
    if started is not None and started.tzinfo is None:  # SQLite keeps no zone: stored as UTC
        started = started.replace(tzinfo=UTC)
    out["started"] = started.isoformat() if started else None
    return out


def format_runs(rows: list[Any]) -> str:
    """The table ``store ls`` prints."""
    table = [("run id", "started", "host", "bus", "device", "controller", "root port",
              "errors")]
    for row in rows:
        flag = f"{row.errors} !! not in group figures" if row.flagged else str(row.errors)
        table.append((str(row.run_id)[:8], row.started.strftime("%Y-%m-%d %H:%M")
                      if row.started else "-", row.host_name or "-", row.bus_kind, row.device,
                      row.controller or "-", row.root_port or "-",
                      flag + ("" if row.complete else " (incomplete)")))
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ..store import open_store

    selection = run_filter(args)
    check_writable(args.json)
    with open_store(args.store or None) as store:
        rows = store.list_runs(selection)
        name = store.name
    human = sys.stderr if is_stdout(args.json) else sys.stdout
    if args.json:
        # One run per line: readable, and json's C encoder (indent= takes the slow Python one).
        body = ",\n".join(json.dumps(_json_row(r)) for r in rows)
        write_result(args.json, f"[\n{body}\n]\n" if rows else "[]\n")
    else:
        print(format_runs(rows), file=human)
    print(f"{len(rows)} run{'s' if len(rows) != 1 else ''} in {name}", file=human)
    return 0
