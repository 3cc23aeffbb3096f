"""From a board design to a Verilator model of its netlist: the steps every bus shares.

:func:`cut_netlist` takes the netlist of the board build for the current sources (synthesized if
the build cache has none: :func:`busprobe.bitstream.ecp5.ecp5_netlist`), cuts it with the bus's
own function and writes the Verilog, named by the netlist's SHA-256, so a changed netlist is a
new file and an unchanged one is written once. :func:`build_netlist_model` compiles that with the
cell library in the bus's generated simulation top (:class:`~busprobe.sim.sim_top.SimTop`).
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from ..sim_top import SimTop
from ..verilator_build import build_root, build_verilator_model
from .cells import ecp5_library
from .yosys_json import Netlist

__all__ = ["cut_netlist", "build_netlist_model"]

log = logging.getLogger(__name__)


def cut_netlist(board_name: str, design_name: str, module: str,
                cut: Callable[[Netlist, str], str]) -> Path:
    """The Verilog of ``design_name``'s netlist on ``board_name``, cut by ``cut(netlist,
    header)`` (which returns the text of module ``module``)."""
    from busprobe.bitstream.designs import get_design
    from busprobe.bitstream.ecp5 import ecp5_netlist
    from busprobe.gateware.boards import get_board

    board = get_board(board_name)
    record = ecp5_netlist(board, get_design(design_name), root=build_root())
    out_dir = build_root() / "gateware" / "netlist"
    path = out_dir / f"{module}-{record.sha256[:12]}.v"
    if not path.exists():
        netlist = Netlist.load(record.path)
        header = (f"Gate-level netlist of {design_name} on {board_name}.\nFrom {record.netlist} "
                  f"({record.source}, key {record.key}, sha256 {record.sha256}).")
        text = cut(netlist, header)
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=out_dir, suffix=".tmp", delete=False) as tmp:
            tmp.write(text)
        os.replace(tmp.name, path)
        log.info("wrote %s (%d cells)", path, len(netlist.cells))
    return path


def build_netlist_model(name: str, verilog: Path, top: SimTop, bench: Sequence[Path]) -> Path:
    """The Verilator model of ``top`` (the bus's generated simulation top, with ``verilog``'s
    module as its device) and ``bench`` (the bus model's sources), built with the ECP5 cell
    library."""
    library = ecp5_library()
    sources = [verilog, *library.sources, *bench, top.write(build_root() / "sim" / "tops")]
    return build_verilator_model(name, sources, top.name, defines=library.defines,
                                 build_args=[f"-I{library.include_dir}"], public_ports_only=True)
