"""``busprobe store push|ls|export``: a lab's results in one database (busprobe.store).

``push`` stores result files (a run already there is left as it is: pushing is idempotent by
``run_id``), ``ls`` lists stored runs (filtered by host, controller, bus, start, verdict), and
``export`` writes a stored run's document back, byte for byte. ``sweep``, ``compare`` and
``report`` take ``--store`` too.
"""

from __future__ import annotations

import argparse

from . import store_export, store_ls, store_push

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("store", help="push, list and export runs of the results store",
                            description=__doc__)
    commands = parser.add_subparsers(dest="store_command", metavar="STORE-COMMAND",
                                     required=True)
    for module in (store_push, store_ls, store_export):
        module.register(commands)
