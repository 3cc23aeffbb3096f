"""The Verilator top of the PCIe bench: busprobe cores, each with its TLP streams on a bridge.

The generated core (:data:`busprobe.gateware.pcie.sim_top.TOPLEVEL`) has its PHY streams as
ports (``pcie_sim_rx_*``, ``pcie_sim_tx_*``); the link model moves whole TLPs, so each core's
streams go through ``sim/hdl/tlp_bridge.sv``, which paces the beats in HDL, and the top has the
bridge's model-side ports (``pcie_sim_rxq_*``, ``pcie_sim_txq_*``) instead of the streams. Every
other port of the core (config, link state, MSI, console) is a port of the top as it is.

:func:`write_bench_top` writes one top for ``N`` cores on one ``sys_clk``/``sys_rst``: one core
with its ports as they are (:data:`BENCH_TOPLEVEL`, ``sim:pcie``), or several, core ``i``'s
ports prefixed ``ep<i>_`` (``sim:pcie?endpoints=N``, :mod:`.multi_top`). The port lists are read
from the generated core and from the bridge's header, so a pad added to either needs no change
here.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from busprobe.gateware.pcie.sim_top import TOPLEVEL

from ..sim_top import HDL, model_ports

__all__ = ["BENCH_TOPLEVEL", "BRIDGE_SOURCE", "write_bench_top", "STREAMS"]

#: The top of the one-core bench (``sim:pcie`` and the cocotb tests).
BENCH_TOPLEVEL = "busprobe_pcie_bench"
#: The HDL half of the link model.
BRIDGE_SOURCE = HDL / "tlp_bridge.sv"
#: The core's stream pads (after ``pcie_sim_``), which the bridge drives and reads.
STREAMS = tuple(f"{side}_{name}" for side in ("rx", "tx")
                for name in ("valid", "ready", "first", "last", "dat", "be"))
_PORT = re.compile(r"^\s*(input|output)\s+wire\s*(\[[^\]]+\])?\s*(\w+)\s*,?\s*$", re.MULTILINE)
_SHARED = ("sys_clk", "sys_rst")


def _core_ports(core: Path) -> list[tuple[str, str, str]]:
    """``(direction, width, name)`` of the core's ports but the clock and reset."""
    text = core.read_text()
    header = text[text.index(f"module {TOPLEVEL}"):text.index(");")]
    ports = [p for p in _PORT.findall(header) if p[2] not in _SHARED]
    names = {name for _, _, name in ports}
    missing = [f"pcie_sim_{s}" for s in STREAMS if f"pcie_sim_{s}" not in names]
    if missing:
        raise RuntimeError(f"{core}: the core has no {', '.join(missing)}")
    return ports


def write_bench_top(core: Path, endpoints: int, out_dir: Path, name: str,
                    prefixes: list[str]) -> Path:
    """Write ``name``: ``endpoints`` instances of the core in ``core`` (its Verilog), core ``i``'s
    ports prefixed ``prefixes[i]``, each with its streams on a bridge; return its path."""
    streams = {f"pcie_sim_{s}" for s in STREAMS}
    model = {port: spec for port, spec in model_ports(BRIDGE_SOURCE, "tlp_bridge").items()
             if port != "clk" and port not in STREAMS}
    decls = ["    input  logic sys_clk", "    input  logic sys_rst"]
    body = []
    for i, prefix in enumerate(prefixes[:endpoints]):
        conns = [".sys_clk(sys_clk)", ".sys_rst(sys_rst)"]
        for direction, width, port in _core_ports(core):
            if port in streams:
                wire = f"{prefix}core_{port}"
                body.append(f"    logic {width + ' ' if width else ''}{wire};")
                conns.append(f".{port}({wire})")
            else:
                decls.append(f"    {direction} logic {width + ' ' if width else ''}{prefix}{port}")
                conns.append(f".{port}({prefix}{port})")
        for port, (direction, width) in model.items():
            bits = f"[{width - 1}:0] " if width > 1 else ""
            decls.append(f"    {direction} logic {bits}{prefix}pcie_sim_{port}".rstrip())
        bridge = [".clk(sys_clk)", *(f".{s}({prefix}core_pcie_sim_{s})" for s in STREAMS),
                  *(f".{port}({prefix}pcie_sim_{port})" for port in model)]
        body.append(f"    {TOPLEVEL} core{i} (\n        " + ",\n        ".join(conns)
                    + "\n    );")
        body.append(f"    tlp_bridge bridge{i} (\n        " + ",\n        ".join(bridge)
                    + "\n    );")
    text = (f"// {endpoints} busprobe PCIe core(s) on one clock, streams on tlp_bridge "
            "(busprobe.sim.pcie.bench_top)\n"
            f"module {name} (\n" + ",\n".join(decls) + "\n);\n"
            + "\n".join(body) + "\nendmodule\n")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}_{endpoints}.sv"
    if not path.exists() or path.read_text() != text:
        # Parallel test workers may write it at once: each writes a whole file and renames.
        with tempfile.NamedTemporaryFile("w", dir=out_dir, suffix=".tmp", delete=False) as tmp:
            tmp.write(text)
        os.replace(tmp.name, path)
    return path
