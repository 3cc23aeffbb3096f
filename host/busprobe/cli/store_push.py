"""``busprobe store push FILE... [--store URL]``: store result files; one already stored (the
same ``run_id``; a file without one gets an id from its bytes) is left as it is.

A file that is not a result document (truncated, another schema) is refused in one line and the
others are stored. When the store cannot be reached the files stay as they are and the line says
how to push them later. Exit status: 0 when every file is stored or was already, 2 otherwise.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from ..os_errors import describe
from .store_options import DEFAULT, add_store

__all__ = ["register", "run", "push_later", "push_swept"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("push", help="store result files (idempotent by run_id)",
                            description=__doc__)
    parser.add_argument("files", nargs="+", metavar="RESULT.json",
                        help="result files written by busprobe sweep --json")
    add_store(parser, optional=False)
    parser.set_defaults(func=run)


def push_later(files: list[str], url: str) -> str:
    """The command that pushes ``files`` once the store is back (the URL without password)."""
    from ..store import redact

    store = f" --store {shlex.quote(redact(url))}" if url != DEFAULT else ""
    return f"busprobe store push {' '.join(shlex.quote(f) for f in files)}{store}"


def run(args: argparse.Namespace) -> int:
    from ..store import StoreError, open_store

    try:
        store = open_store(args.store or None)
    except StoreError as exc:
        print(f"busprobe: error: {exc}; nothing pushed, the files are kept: push them later "
              f"with {push_later(args.files, args.store)}", file=sys.stderr)
        return 2
    refused = 0
    with store:
        for index, name in enumerate(args.files):
            try:
                raw = Path(name).read_bytes()
            except OSError as exc:
                print(f"busprobe: error: {describe(exc, f'cannot read {name}')}", file=sys.stderr)
                refused += 1
                continue
            try:
                pushed = store.push(raw, name)
            except StoreError as exc:
                rest = args.files[index:]
                print(f"busprobe: error: {exc}; the files are kept: push them later with "
                      f"{push_later(rest, args.store)}", file=sys.stderr)
                return 2
            except ValueError as exc:  # not a result document: this file only
                print(f"busprobe: error: refused: {exc}", file=sys.stderr)
                refused += 1
                continue
            print(f"{'stored' if pushed.stored else 'already stored'} {pushed.run_id} {name}")
    return 2 if refused else 0


def push_swept(doc: dict[str, Any], url: str, json_file: str | None) -> str | None:
    """Store a sweep's document as it ends; None when stored, else the one line saying why not,
    where the run is kept (``json_file``, the JSON just written; without one, a file in the
    user's data directory) and how to push it later."""
    from ..result_file import write_result
    from ..results import document_bytes
    from ..store import StoreError, open_store
    from ..store.url import data_dir

    raw = document_bytes(doc)
    try:
        with open_store(url or None) as store:
            pushed = store.push(raw, f"the run of {doc['device']}")
            print(f"stored run {pushed.run_id} in {store.name}", file=sys.stderr)
            return None
    except StoreError as exc:
        failure = str(exc)
    kept = json_file
    if kept is None:
        kept = str(data_dir() / "unpushed" / f"{doc.get('run_id', 'run')}.json")
        write_result(kept, raw)
    return f"{failure}; the run is kept in {kept}: push it later with {push_later([kept], url)}"
