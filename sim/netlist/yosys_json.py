"""A yosys JSON netlist (``write_json``), as gate-level simulation needs it: cells and nets.

Only the flattened top module matters (``synth_ecp5`` flattens): its ports, its cells (type,
parameters, one list of bits per port) and the names yosys kept for its nets. A bit is an
``int`` (a net) or one of the strings ``"0"``, ``"1"``, ``"x"``, ``"z"`` (a constant).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Bit", "Cell", "Netlist", "NetlistError"]

Bit = int | str


class NetlistError(ValueError):
    """The netlist cannot be simulated as asked; ``str()`` is one line naming what and where."""


@dataclass
class Cell:
    """One cell instance.

    Attributes
    ----------
    name : str
        Its (hierarchical, flattened) instance name.
    type : str
        The primitive (``LUT4``, ``TRELLIS_FF``, ``DP16KD``, ...).
    parameters : dict of str to str
        yosys' encoding: a string of ``01xz`` is a bit vector (MSB first), anything else a
        string, with one trailing space added where it would otherwise read as bits.
    connections : dict of str to list of Bit
        Per port, its bits, LSB first.
    directions : dict of str to str
        Per port, ``input`` / ``output`` / ``inout``.
    attributes : dict of str to str
        What yosys kept (``FREQUENCY_PIN_CLKOP`` of a PLL, say); not simulated.
    """

    name: str
    type: str
    parameters: dict[str, str]
    connections: dict[str, list[Bit]]
    directions: dict[str, str]
    attributes: dict[str, str]

    def net(self, port: str) -> Bit:
        """The single bit on a 1-bit ``port``."""
        bits = self.connections.get(port, ["x"])
        if len(bits) != 1:
            raise NetlistError(f"{self.type} {self.name}: port {port} has {len(bits)} bits")
        return bits[0]


class Netlist:
    """The top module of a yosys JSON netlist.

    Parameters
    ----------
    module : dict
        The module's JSON object.
    name : str
        Its name.

    Attributes
    ----------
    ports : dict of str to tuple
        ``{name: (direction, bits)}``.
    cells : dict of str to Cell
        By instance name; cells can be removed (:meth:`remove`) when the simulation cuts the
        design out of its board.
    """

    def __init__(self, module: dict, name: str) -> None:
        self.name = name
        self.ports: dict[str, tuple[str, list[Bit]]] = {
            port: (spec["direction"], list(spec["bits"]))
            for port, spec in module["ports"].items()}
        self.cells: dict[str, Cell] = {
            cell_name: Cell(cell_name, cell["type"], dict(cell.get("parameters", {})),
                            {p: list(b) for p, b in cell.get("connections", {}).items()},
                            dict(cell.get("port_directions", {})),
                            dict(cell.get("attributes", {})))
            for cell_name, cell in module["cells"].items()
            # Amaranth's hierarchy markers: no logic, no ports.
            if cell["type"] != "$scopeinfo"}
        #: Net name -> its bits (LSB first), as yosys kept them.
        self.netnames: dict[str, list[Bit]] = {
            name: list(spec["bits"]) for name, spec in module.get("netnames", {}).items()}
        self._names: dict[int, list[str]] = {}
        self._next = 1 + max((b for bits in self.netnames.values() for b in bits
                              if isinstance(b, int)), default=1)
        for cell in self.cells.values():
            for bits in cell.connections.values():
                self._next = max([self._next, *(b + 1 for b in bits if isinstance(b, int))])
        for net_name, spec in module.get("netnames", {}).items():
            for bit in spec["bits"]:
                if isinstance(bit, int):
                    self._names.setdefault(bit, []).append(net_name)

    @classmethod
    def load(cls, path: Path | str, top: str | None = None) -> Netlist:
        """Read ``path``; ``top`` is the top module (default: the one yosys marked top)."""
        try:
            modules = json.loads(Path(path).read_text())["modules"]
        except (OSError, ValueError, KeyError) as exc:
            raise NetlistError(f"{path}: not a yosys JSON netlist ({exc})") from None
        if top is None:
            tops = [name for name, module in modules.items()
                    if int(module.get("attributes", {}).get("top", "0"), 2)]
            if len(tops) != 1:
                raise NetlistError(f"{path}: {len(tops)} top modules ({', '.join(tops)})")
            top = tops[0]
        if top not in modules:
            raise NetlistError(f"{path}: no module {top!r}")
        return cls(modules[top], top)

    def of_type(self, *types: str) -> list[Cell]:
        """The cells of these types, in name order."""
        return sorted((c for c in self.cells.values() if c.type in types), key=lambda c: c.name)

    def remove(self, cell: Cell) -> None:
        del self.cells[cell.name]

    def names(self, bit: Bit) -> list[str]:
        """The names yosys kept for a net (shortest first), for messages."""
        if not isinstance(bit, int):
            return [f"constant {bit}"]
        return sorted(self._names.get(bit, []), key=len)

    def describe(self, bit: Bit) -> str:
        names = self.names(bit)
        return f"net {bit} ({names[0]})" if names else f"net {bit}"

    def pad_of(self, bit: Bit) -> tuple[str, int] | None:
        """``(port, index)`` if ``bit`` is a top-level port's bit."""
        for port, (_, bits) in self.ports.items():
            if bit in bits:
                return port, bits.index(bit)
        return None

    def driver(self, bit: Bit) -> tuple[Cell, str, int] | None:
        """``(cell, output port, index)`` driving ``bit``, if a cell does."""
        for cell in self.cells.values():
            for port, bits in cell.connections.items():
                if cell.directions.get(port) == "output" and bit in bits:
                    return cell, port, bits.index(bit)
        return None

    def detach(self, bit: int) -> None:
        """Disconnect whatever drives ``bit`` (its output goes to a new net nothing reads), so
        the simulation can drive ``bit`` itself."""
        for cell in self.cells.values():
            for port, bits in cell.connections.items():
                if cell.directions.get(port) == "output" and bit in bits:
                    bits[bits.index(bit)] = self._next
                    self._next += 1

    def prune(self, needed: set[int]) -> list[Cell]:
        """Remove every cell nothing in ``needed`` depends on; returns the removed cells.

        A cell stays if it drives a needed net; its inputs (data, clock, enable, reset) are
        then needed too.
        """
        driver: dict[int, Cell] = {}
        for cell in self.cells.values():
            for port, bits in cell.connections.items():
                if cell.directions.get(port) == "output":
                    driver.update((b, cell) for b in bits if isinstance(b, int))
        kept: set[str] = set()
        work = [b for b in needed if isinstance(b, int)]
        seen = set(work)
        while work:
            cell = driver.get(work.pop())
            if cell is None or cell.name in kept:
                continue
            kept.add(cell.name)
            for port, bits in cell.connections.items():
                if cell.directions.get(port) != "output":
                    fresh = [b for b in bits if isinstance(b, int) and b not in seen]
                    seen.update(fresh)
                    work += fresh
        removed = [c for c in self.cells.values() if c.name not in kept]
        for cell in removed:
            self.remove(cell)
        return removed

    def drivers(self) -> dict[int, str]:
        """Net -> the cell (``"type name"``) whose output drives it."""
        driven: dict[int, str] = {}
        for cell in self.cells.values():
            for port, bits in cell.connections.items():
                if cell.directions.get(port) == "output":
                    for bit in bits:
                        if isinstance(bit, int):
                            driven[bit] = f"{cell.type} {cell.name}"
        return driven
