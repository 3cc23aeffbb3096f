"""``busprobe flash --board NAME BITSTREAM [--to-flash] [--dry-run]``: load a bitstream."""

from __future__ import annotations

import argparse

from busprobe.gateware.boards import board_names, get_board

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "flash", help="load a bitstream onto a board (apollo / openFPGALoader)",
        description="Load BITSTREAM into the board's FPGA, or with --to-flash into its "
                    "configuration flash. The bitstream is checked against the board first.")
    parser.add_argument("--board", required=True, metavar="NAME",
                        help=f"board ({', '.join(board_names())})")
    parser.add_argument("bitstream", metavar="BITSTREAM", help="bitstream file (.bit)")
    parser.add_argument("--to-flash", action="store_true",
                        help="write the configuration flash (survives power cycles)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the programmer command instead of running it")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from busprobe.bitstream.flash import plan_flash, run_flash

    plan = plan_flash(get_board(args.board), args.bitstream, to_flash=args.to_flash)
    if args.dry_run:
        print(plan.shell_line())
        return 0
    run_flash(plan)
    where = "configuration flash" if args.to_flash else "FPGA"
    print(f"loaded {plan.bitstream} into the {where} of {plan.board.title}")
    return 0
