"""Board pin descriptions read from ``constraints/*.toml`` into Amaranth resources.

Pins are data, kept in ``constraints/`` with the upstream file they were copied from named at the
top; this module only turns them into :class:`amaranth.build.Resource` objects, so a board class
is a few lines (device, clock, which PHY) rather than a copy of a vendor platform file. The folder
is installed as the package ``busprobe.gateware.constraints`` and found through the import system,
so an installed busprobe reads the same files as a checkout.
"""

from __future__ import annotations

import importlib.util
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CONSTRAINTS_DIR", "BoardConstraints", "load_constraints"]


def _constraints_dir() -> Path:
    spec = importlib.util.find_spec("busprobe.gateware.constraints")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("busprobe.gateware.constraints is not installed: reinstall busprobe "
                          "(an editable install made before the package existed lacks it)")
    return Path(next(iter(spec.submodule_search_locations)))


#: The installed ``constraints/`` folder (package ``busprobe.gateware.constraints``).
CONSTRAINTS_DIR = _constraints_dir()

# Subsignals of a ULPI PHY resource and their directions, as amaranth-boards' ULPIResource
# lays them out (``clk`` takes its direction from ``clk_dir``).
_ULPI_DIRECTIONS = {"data": "io", "dir": "i", "nxt": "i", "stp": "o", "rst": "o"}


@dataclass(frozen=True)
class BoardConstraints:
    """The content of one ``constraints/<board>.toml``.

    Attributes
    ----------
    path : Path
        The file read.
    device : dict
        FPGA family, device, package, speed grade and tool options.
    ulpi_extra_registers : dict[int, int]
        PHY vendor registers written at start-up (address -> value).
    resources : list[dict]
        One table per resource, as written in the file.
    """

    path: Path
    device: dict[str, Any]
    ulpi_extra_registers: dict[int, int] = field(default_factory=dict)
    resources: list[dict[str, Any]] = field(default_factory=list)

    def amaranth_resources(self) -> list:
        """The resources as :class:`amaranth.build.Resource` objects."""
        return [res for table in self.resources for res in _to_resources(table)]

    def resource(self, name: str) -> dict[str, Any]:
        for table in self.resources:
            if table["name"] == name:
                return table
        raise KeyError(f"{self.path.name} has no resource {name!r}")


def load_constraints(name: str, *, directory: Path = CONSTRAINTS_DIR) -> BoardConstraints:
    """Read ``<directory>/<name>.toml``."""
    path = directory / f"{name}.toml"
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ValueError(f"no pin constraints {path}") from None
    registers = {int(k, 0): int(v) for k, v in data.get("ulpi_extra_registers", {}).items()}
    return BoardConstraints(path=path, device=data["device"], ulpi_extra_registers=registers,
                            resources=list(data.get("resource", [])))


def _to_resources(table: dict[str, Any]) -> list:
    from amaranth.build import Attrs, Clock, Pins, Resource, Subsignal

    extras = []
    if "clock_hz" in table:
        extras.append(Clock(float(table["clock_hz"])))
    if "attrs" in table:
        extras.append(Attrs(**table["attrs"]))
    name, number = table["name"], table.get("number", 0)

    if table.get("kind") == "ulpi":
        subsignals = []
        for sub in ("data", "clk", "dir", "nxt", "stp", "rst"):
            if sub not in table:
                continue
            direction = table.get("clk_dir", "i") if sub == "clk" else _ULPI_DIRECTIONS[sub]
            invert = sub == "rst" and bool(table.get("rst_invert", False))
            subsignals.append(Subsignal(sub, Pins(table[sub], dir=direction, invert=invert)))
        return [Resource(name, number, *subsignals, *extras)]

    invert = bool(table.get("invert", False))
    if table.get("each", False):  # one resource per pin, numbered from `number`
        return [Resource(name, number + i, Pins(pin, dir=table["dir"], invert=invert), *extras)
                for i, pin in enumerate(table["pins"].split())]
    return [Resource(name, number, Pins(table["pins"], dir=table["dir"], invert=invert), *extras)]
