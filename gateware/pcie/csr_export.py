"""The PCIe core's BAR0 register map, exported from LiteX into the contract.

LiteX places every CSR of the core (its own ``ctrl``, LitePCIe's PHY, MSI and DMA registers, and
busprobe's block, declared in :data:`busprobe.protocol.pcie.BUSPROBE_CSRS`) and exports the map
from that one source, as LitePCIe's own tools do. :func:`csr_map` builds the core (around the
simulated PHY; the board's target places its regions alike, a test holds them equal) and reads
LiteX's export; ``python -m busprobe.gateware.pcie.csr_export`` writes it to
``host/busprobe/protocol/pcie_csr_map.json``, which :mod:`busprobe.protocol.pcie` reads (the
contract stays standard library only), and ``--check`` fails when the committed file is stale.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["csr_map", "csr_map_of", "render", "MAP_FILE", "main"]

#: The committed map, package data of the contract.
MAP_FILE = "pcie_csr_map.json"


def csr_map_of(csr_json: Path) -> dict[str, Any]:
    """The contract's map from LiteX's ``csr.json``: region bases and every register's BAR0
    offset (its CPU address less the CSR region's base), size in 32-bit words and access, and
    the CPU's memory regions."""
    exported = json.loads(Path(csr_json).read_text())
    base = exported["memories"]["csr"]["base"]
    return {"generated_by": "python -m busprobe.gateware.pcie.csr_export",
            "memories": {name: {"base": region["base"], "size": region["size"]}
                         for name, region in exported["memories"].items()},
            "bases": {name: address - base for name, address in exported["csr_bases"].items()},
            "registers": {name: {"offset": reg["addr"] - base, "words": reg["size"],
                                 "access": reg["type"]}
                          for name, reg in exported["csr_registers"].items()}}


def csr_map() -> dict[str, Any]:
    """Build the simulated core with LiteX and return its exported map."""
    from .sim_top import generate_verilog

    with tempfile.TemporaryDirectory() as out:
        generate_verilog(out)
        return csr_map_of(Path(out) / "csr.json")


def render(csr_map: dict[str, Any]) -> str:
    """The map as the committed file has it: one register a line, in LiteX's order."""
    registers = ",\n".join(f"  {json.dumps(name)}: {json.dumps(reg)}"
                           for name, reg in csr_map["registers"].items())
    return (f'{{"generated_by": {json.dumps(csr_map["generated_by"])},\n'
            f' "memories": {json.dumps(csr_map["memories"])},\n'
            f' "bases": {json.dumps(csr_map["bases"])},\n'
            f' "registers": {{\n{registers}\n }}}}\n')


def _committed() -> Path:
    return Path(str(resources.files("busprobe.protocol") / MAP_FILE))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write (or --check) the contract's PCIe CSR "
                                                 "map from LiteX's export.")
    parser.add_argument("--check", action="store_true", help="fail if the committed map is stale")
    args = parser.parse_args(argv)
    text = render(csr_map())
    path = _committed()
    if args.check:
        if path.read_text() != text:
            print(f"{path} is stale: run python -m busprobe.gateware.pcie.csr_export",
                  file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
