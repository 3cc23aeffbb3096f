"""`busprobe sweep` (placeholder until its issue lands: registered so the CLI loads)."""

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("sweep", help="(not implemented yet)")
    parser.set_defaults(func=lambda args: (_ for _ in ()).throw(ValueError("sweep: not implemented yet")))
