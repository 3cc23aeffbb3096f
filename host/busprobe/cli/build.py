"""``busprobe build --board NAME --design DESIGN [--out DIR]``: a bitstream with its figures.

ECP5 boards are built here (YoWASP) and report Fmax per clock domain, utilisation and build time
on the terminal and in a JSON next to the bitstream. A clock below its constraint fails the
command and writes no bitstream; its figures still go to ``--json``. Artix-7 PCIe targets are
generated with LiteX and built only where Vivado is installed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from busprobe.gateware.boards import Board, board_names, get_board

from ..result_file import check_writable, is_stdout, write_result
from ..stdout_guard import stdout_to_stderr

if TYPE_CHECKING:
    from busprobe.bitstream.designs import Design

__all__ = ["register", "run"]

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "build", help="build a bitstream for a board (Fmax, utilisation, build time)",
        description="Build DESIGN for BOARD. Builds are cached by design + toolchain hash.")
    parser.add_argument("--board", required=True, metavar="NAME",
                        help=f"board ({', '.join(board_names())})")
    parser.add_argument("--design", required=True, metavar="DESIGN",
                        help="usb2 (lean), usb2-full (with BOT, packet-shape and receive-drop "
                             "counters), usb2-storage (a SCSI null disk over BOT), usb2-stock, "
                             "usb3, usb3-storage (the null disk at SuperSpeed), pcie or "
                             "pcie-endpoint (the soft PCIe endpoint on an ECP5 DCU lane) "
                             "(what the board can carry)")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="copy the bitstream and its JSON report here")
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    parser.add_argument("--seed", type=_seed, metavar="N",
                        help="ECP5: nextpnr placement seed (default: nextpnr's)")
    parser.add_argument("--lint", action="store_true",
                        help="PCIe: also lint the generated Verilog with Verilator (vendor "
                             "primitives and the hard IP as generated black boxes)")
    parser.add_argument("--json", dest="json_out", metavar="FILE",
                        help="also write the build report to FILE ('-' for stdout)")
    parser.set_defaults(func=run)


def _seed(text: str) -> int:
    try:
        seed = int(text)
    except ValueError:
        seed = 0
    if seed < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a seed (a whole number from 1)")
    return seed


def run(args: argparse.Namespace) -> int:
    from busprobe.bitstream.designs import BuildError, get_design
    from busprobe.toolchain import ToolchainMissing

    board = get_board(args.board)
    design = get_design(args.design)
    if design.name not in board.designs:
        raise ValueError(f"board {board.name} cannot carry design {design.name!r} "
                         f"(it carries: {', '.join(board.designs)})")
    _check_outputs(args.out, args.json_out)  # before minutes of building, not after
    # With --json -, stdout carries the JSON only: the summary goes to stderr, and so does
    # whatever the tools (Yosys, nextpnr, LiteX) print to file descriptor 1.
    # The report is written after the guard, once descriptor 1 is stdout again: written inside
    # it, ``--json -`` went to stderr behind the summary (issue 47, item 6).
    report = _Report()
    try:
        with stdout_to_stderr() if is_stdout(args.json_out) else contextlib.nullcontext():
            if board.family == "ecp5":
                status = _build_ecp5(args, board, design, report)
            else:
                status = _build_pcie(args, board, design, report)
    except (BuildError, ToolchainMissing) as exc:
        _write_json(args.json_out, report.document)  # a missed timing's figures say by how much
        if args.debug:
            raise
        print(f"busprobe: error: {exc}", file=sys.stderr)
        return 2
    _write_json(args.json_out, report.document)
    return status


class _Report:
    """The build's JSON report, kept until the build has ended.

    Attributes
    ----------
    document : dict or None
        The report, once the build (or its timing check) produced one.
    """

    document: dict[str, Any] | None = None


def _build_ecp5(args: argparse.Namespace, board: Board, design: Design,
                report: _Report) -> int:
    from busprobe.bitstream.ecp5 import build_ecp5
    from busprobe.bitstream.result import TimingNotMet
    from busprobe.build_cache import build_root

    try:
        result = build_ecp5(board, design, root=build_root(), out=args.out, force=args.force,
                            seed=args.seed)
    except TimingNotMet as exc:
        # The figures say by how much; the error line (the caller's) says that it failed.
        print("\n".join(exc.result.summary_lines()), file=_human(args), flush=True)
        report.document = exc.result.to_json()
        raise
    print("\n".join(result.summary_lines()), file=_human(args), flush=True)
    report.document = result.to_json()
    return 0


def _build_pcie(args: argparse.Namespace, board: Board, design: Design,
                report: _Report) -> int:
    from busprobe.bitstream.pcie import build_pcie_target
    from busprobe.build_cache import build_root

    target = build_pcie_target(board, design, root=build_root(), out=args.out,
                               lint=args.lint)
    print("\n".join(target.summary_lines()), file=_human(args), flush=True)
    report.document = target.to_json()
    return 0 if target.lint_findings is None or not target.lint_findings else 1


def _check_outputs(out: Path | None, json_out: str | None) -> None:
    """One-line ValueError now for an output the build could not write at its end."""
    if out is not None and out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a directory")
    if out is not None and not out.exists():
        parent = next((p for p in out.parents if p.exists()), Path("."))
        if not parent.is_dir() or not os.access(parent, os.W_OK):
            raise ValueError(f"--out {out}: cannot create it under {parent}")
    check_writable(json_out)


def _human(args: argparse.Namespace) -> TextIO:
    """Where the summary goes: stderr when the JSON goes to stdout."""
    return sys.stderr if is_stdout(args.json_out) else sys.stdout


def _write_json(path: str | None, data: dict[str, Any] | None) -> None:
    if path is not None and data is not None:
        write_result(path, json.dumps(data, indent=2) + "\n")  # busprobe.result_file's rules
