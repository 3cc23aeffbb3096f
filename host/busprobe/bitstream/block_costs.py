"""What each block of a design costs on the FPGA, from the flattened netlist of an ECP5 build.

yosys flattens the design before mapping, and each mapped cell is named after the net it
drives, which keeps the hierarchical path of the Amaranth signal (``device.usb.Endpoint0Guard.
control.ProbeRequestHandler.position_TRELLIS_FF_Q_3``). Attributing cells by that path is an
estimate — logic shared by two blocks counts where its output goes — but it is the only view
that survives flattening, and a per-module synthesis (``-noflatten``) would measure a different
circuit: no cross-module optimisation, no constant propagation into LUNA.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

__all__ = ["BLOCKS", "block_costs", "cost_table"]

#: Block name for every cell path prefix, first match wins; one list serves the busprobe device
#: and stock LUNA (their paths differ only in the endpoint and source names).
BLOCKS: tuple[tuple[str, str], ...] = (
    ("device.usb.Endpoint0Guard.control.ProbeRequestHandler", "EP0 request handler"),
    ("device.usb.Endpoint0Guard", "control endpoint (LUNA)"),
    ("device.usb.USBControlEndpoint", "control endpoint (LUNA)"),
    ("device.usb.StreamInEndpoint", "IN endpoint"),
    ("device.usb.USBStreamInEndpoint", "IN endpoint"),
    ("device.usb.StreamOutEndpoint", "OUT endpoint"),
    ("device.usb.USBStreamOutEndpoint", "OUT endpoint"),
    ("device.data_path.source", "pattern source"),
    ("device.source", "pattern source"),
    ("device.data_path.checker", "pattern checker"),
    ("device.data_path.bot", "BOT framer"),
    ("device.data_path.engine", "SCSI engine (storage)"),
    ("device.data_path.uas", "UAS engine (storage)"),
    ("device.data_path.telemetry", "storage telemetry and answers"),
    ("device.data_path", "data path"),
    ("device.telemetry", "telemetry"),
    ("device.rx_monitor", "telemetry"),
    ("device.usb", "device core (LUNA)"),
    ("device", "telemetry"),
    ("car", "clocks and reset"),
    ("pin_", "I/O buffers"),
)

#: Cell types counted, as the build report names them.
CELL_TYPES = ("LUT4", "TRELLIS_FF", "CCU2C", "DP16KD")


def _block(cell_name: str) -> str:
    path = cell_name.rsplit(".", 1)[0] if "." in cell_name else cell_name
    for prefix, block in BLOCKS:
        if path == prefix or path.startswith(prefix + ".") or (
                prefix.endswith("_") and path.startswith(prefix)):
            return block
    return "other"


def block_costs(netlist: Path | str) -> dict[str, dict[str, int]]:
    """``{block: {cell type: count}}`` of a yosys JSON netlist (``top.json`` of a build)."""
    try:
        modules = json.loads(Path(netlist).read_text())["modules"]
        cells = modules["top"]["cells"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{netlist}: not a flattened yosys netlist ({exc})") from None
    costs: dict[str, dict[str, int]] = {}
    for name, cell in cells.items():
        kind = cell.get("type")
        if kind not in CELL_TYPES:
            continue
        entry = costs.setdefault(_block(name), dict.fromkeys(CELL_TYPES, 0))
        entry[kind] += 1
    return costs


def cost_table(columns: Sequence[tuple[str, dict[str, dict[str, int]]]]) -> str:
    """A text table: one row per block, LUT4/FF per design column (``(title, costs)`` pairs)."""
    blocks: list[str] = []
    for _, costs in columns:
        blocks += [block for block in costs if block not in blocks]
    order = [block for _, block in BLOCKS] + ["other"]
    blocks.sort(key=lambda block: order.index(block) if block in order else len(order))
    width = max(len(block) for block in blocks + ["total"])
    header = f"{'block':<{width}}" + "".join(f" | {title:>19}" for title, _ in columns)
    lines = [header, f"{'':<{width}}" + " | {:>8} {:>10}".format("LUT4", "FF") * len(columns)]
    for block in [*blocks, "total"]:
        cells = []
        for _, costs in columns:
            if block == "total":
                lut = sum(entry["LUT4"] for entry in costs.values())
                ff = sum(entry["TRELLIS_FF"] for entry in costs.values())
            else:
                entry = costs.get(block, dict.fromkeys(CELL_TYPES, 0))
                lut, ff = entry["LUT4"], entry["TRELLIS_FF"]
            cells.append(f" | {lut:>8} {ff:>10}")
        lines.append(f"{block:<{width}}" + "".join(cells))
    return "\n".join(lines)
