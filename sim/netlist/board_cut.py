"""Cutting a board netlist down to what the simulation drives: no pads, no PLL.

The RTL simulation runs the design with its bus (ULPI, PIPE) and clock as top-level ports; the
board build has I/O buffers between those signals and the pins, and a PLL making the clocks.
Verilator is two-state (no tristate pads) and has no PLL, so the netlist simulation removes the
same two things and nothing else:

* every ``TRELLIS_IO`` (the buffer synthesis puts on each pin): what it received from its pin now
  comes from a top-level input, what it drove onto its pin goes to a top-level output, its
  tristate control becomes an output enable; a pin the simulation has no use for is dropped;
* every ``EHXPLLL``: each clock output is driven by the simulation's clock and ``LOCK`` by the
  inverse of its reset, so the board's own reset logic (LUNA's PHY reset controller, clocked by
  a PLL output) runs as it does on the board after lock. The simulation has one clock: a PLL
  output of another frequency (Cynthion's 120 MHz ``sync``) runs at the simulation's clock, which
  only stretches that logic's timing (the record lists each such net).

What is cut is written into the Verilog's header (:class:`CutReport`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .verilog import Boundary
from .yosys_json import Bit, Netlist, NetlistError

__all__ = ["Pin", "CutReport", "cut_clocking", "cut_pads"]

PLL_CLOCKS = ("CLKOP", "CLKOS", "CLKOS2", "CLKOS3")


@dataclass(frozen=True)
class Pin:
    """Where one board pin's signal goes in the simulation.

    Attributes
    ----------
    kind : str
        ``"in"`` (pin to design), ``"out"`` (design to pin), ``"bidir"``, or ``"drop"``.
    port : str
        The simulation port (``ulpi_data``: a bidirectional pin becomes ``ulpi_data_i`` and
        ``ulpi_data_o``); empty for ``"drop"``.
    """

    kind: str
    port: str = ""


@dataclass
class CutReport:
    """What the cut did, for the generated file's header and the run's log."""

    pins: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"pin {p}" for p in self.pins]
        out += [f"dropped pin {p}" for p in self.dropped]
        return out + self.notes


def cut_clocking(netlist: Netlist, boundary: Boundary, report: CutReport, *, clock: str,
                 reset: str, clock_mhz: float) -> None:
    """Remove every PLL; its clock outputs become ``clock``, its ``LOCK`` ``~reset``."""
    for pll in netlist.of_type("EHXPLLL"):
        for out in PLL_CLOCKS:
            bit = pll.connections.get(out, ["x"])[0]
            if not isinstance(bit, int):
                continue
            freq = pll.attributes.get(f"FREQUENCY_PIN_{out}")  # kept by yosys from Amaranth
            boundary.drives[bit] = clock
            where = netlist.describe(bit)
            if freq and abs(float(freq) - clock_mhz) > 1e-3:
                report.notes.append(f"PLL {pll.name} {out} ({where}): {float(freq):g} MHz on "
                                     f"the board, the {clock_mhz:g} MHz {clock} here")
            else:
                report.notes.append(f"PLL {pll.name} {out} ({where}): {clock}")
        lock = pll.connections.get("LOCK", ["x"])[0]
        if isinstance(lock, int):
            boundary.drives[lock] = f"~{reset}"
            report.notes.append(f"PLL {pll.name} LOCK: ~{reset}")
        netlist.remove(pll)


def cut_pads(netlist: Netlist, boundary: Boundary, report: CutReport,
             pin: Callable[[str], Pin]) -> dict[str, list[Bit]]:
    """Remove every ``TRELLIS_IO``, connecting each to the port ``pin(pad port name)`` names.

    Inputs drive their buffer's output net from ``<port>`` (``<port>_i`` for a bidirectional
    pin), outputs go to ``<port>`` (``<port>_o``); returns ``{port: [T net per bit]}`` of every
    bidirectional port, for the caller to make its output enable.
    """
    tristates: dict[str, list[Bit]] = {}
    widths = {name: len(bits) for name, (_, bits) in netlist.ports.items()}
    for io in netlist.of_type("TRELLIS_IO"):
        pad = netlist.pad_of(io.net("B"))
        if pad is None:
            raise NetlistError(f"TRELLIS_IO {io.name} drives no pin")
        pad_name, index = pad
        where = pad_name if widths[pad_name] == 1 else f"{pad_name}[{index}]"
        role = pin(pad_name)
        netlist.remove(io)
        if role.kind == "drop":
            report.dropped.append(where)
            continue
        wide = widths[pad_name] > 1
        if role.kind in ("in", "bidir"):
            port = role.port + ("_i" if role.kind == "bidir" else "")
            received = io.net("O")
            if isinstance(received, int):
                boundary.drives[received] = f"{port}[{index}]" if wide else port
        if role.kind in ("out", "bidir"):
            port = role.port + ("_o" if role.kind == "bidir" else "")
            bits = boundary.reads.setdefault(port, ["0"] * widths[pad_name])
            bits[index] = io.net("I")
        if role.kind == "bidir":
            tristates.setdefault(role.port, ["1"] * widths[pad_name])[index] = io.net("T")
        report.pins.append(f"{where}: {role.kind} {role.port}")
    return tristates
