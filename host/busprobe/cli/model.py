"""`busprobe model` (placeholder until its issue lands: registered so the CLI loads)."""

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("model", help="(not implemented yet)")
    parser.set_defaults(func=lambda args: (_ for _ in ()).throw(ValueError("model: not implemented yet")))
