"""A cut netlist as one Verilog module: every net a wire, every cell an instance of its model.

The module's ports are the simulation boundary (:class:`Boundary`): its inputs drive nets the
cut left without a driver (a PLL output, an input buffer's output), its outputs read nets (an
output buffer's input). Everything else is the netlist as yosys wrote it: instance names,
parameters and connections unchanged, with cell types renamed only where busprobe's own model
stands in for an upstream black box (:mod:`.cells`).

Verilator is two-state: a constant ``x`` or ``z`` bit on a cell input (yosys leaves unused RAM
data inputs at ``x``) is written as ``0``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .yosys_json import Bit, Netlist, NetlistError

__all__ = ["Boundary", "write_verilog"]

_BITS = re.compile(r"^[01xz]+$")


@dataclass
class Boundary:
    """The ports of the simulated module and how they meet the netlist.

    Attributes
    ----------
    ports : list of tuple
        ``(name, "input" | "output", width)`` in declaration order.
    drives : dict of int to str
        Net -> the Verilog expression (over input ports) that drives it.
    reads : dict of str to list
        Output port -> its bits (LSB first), each a net or a constant, or one Verilog
        expression (a string in a one-element list starting with ``=``).
    """

    ports: list[tuple[str, str, int]] = field(default_factory=list)
    drives: dict[int, str] = field(default_factory=dict)
    reads: dict[str, list[Bit]] = field(default_factory=dict)


def _bit(bit: Bit) -> str:
    if isinstance(bit, int):
        return f"n{bit}"
    return "1'b1" if bit == "1" else "1'b0"  # "0", and two-state for "x" / "z"


def _bits(bits: list[Bit]) -> str:
    if len(bits) == 1:
        return _bit(bits[0])
    return "{" + ", ".join(_bit(b) for b in reversed(bits)) + "}"


def _parameter(value: str) -> str:
    """yosys' JSON parameter encoding -> a Verilog constant."""
    if _BITS.match(value):
        return f"{len(value)}'b{value.replace('x', '0').replace('z', '0')}"
    if value.endswith(" ") and _BITS.match(value[:-1]):
        value = value[:-1]  # yosys' marker of a string that would read as bits
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _escaped(name: str) -> str:
    return name if re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name) else f"\\{name} "


def write_verilog(netlist: Netlist, module: str, boundary: Boundary,
                  models: Mapping[str, str], header: str = "") -> str:
    """The Verilog text of ``netlist`` cut at ``boundary`` as module ``module``.

    ``models`` maps each cell type to the module that simulates it. Every net a cell reads must
    have a driver (a cell output or a boundary input).

    Raises
    ------
    NetlistError
        Naming the first net a cell reads that nothing drives, or a net driven twice.
    """
    driven = netlist.drivers()
    for net in boundary.drives:
        if net in driven:
            raise NetlistError(f"the boundary drives {netlist.describe(net)}, which "
                               f"{driven[net]} drives too")
    used: set[int] = set()
    lines = [f"// {line}".rstrip() for line in header.splitlines()]
    ports = ", ".join(f"{d} wire {'' if w == 1 else f'[{w - 1}:0] '}{n}"
                      for n, d, w in boundary.ports)
    lines.append(f"module {module}({ports});")
    instances = []
    for cell in sorted(netlist.cells.values(), key=lambda c: c.name):
        for port, bits in cell.connections.items():
            for bit in bits:
                if not isinstance(bit, int):
                    continue
                used.add(bit)
                if cell.directions.get(port) != "output" and bit not in driven \
                        and bit not in boundary.drives:
                    raise NetlistError(f"{cell.type} {cell.name} reads {netlist.describe(bit)} "
                                       f"on {port}, which nothing drives once the board's I/O "
                                       "buffers and clocking are cut away")
        params = ", ".join(f".{_escaped(k)}({_parameter(v)})"
                           for k, v in sorted(cell.parameters.items()))
        conns = ", ".join(f".{_escaped(p)}({_bits(b)})"
                          for p, b in sorted(cell.connections.items()))
        instances.append(f"  {models[cell.type]} {'#(' + params + ') ' if params else ''}"
                         f"{_escaped(cell.name)} ({conns});")
    for bits in boundary.reads.values():
        used.update(b for b in bits if isinstance(b, int))
    used.update(boundary.drives)
    lines += [f"  wire n{net};" for net in sorted(used)]
    lines += [f"  assign n{net} = {expr};" for net, expr in sorted(boundary.drives.items())]
    for port, bits in boundary.reads.items():
        for bit in bits:
            if isinstance(bit, int) and bit not in driven and bit not in boundary.drives:
                raise NetlistError(f"output {port} reads {netlist.describe(bit)}, which nothing "
                                   "drives")
        expr = bits[0][1:] if isinstance(bits[0], str) and bits[0].startswith("=") \
            else _bits(bits)
        lines.append(f"  assign {port} = {expr};")
    lines += instances
    lines.append("endmodule")
    return "\n".join(lines) + "\n"
