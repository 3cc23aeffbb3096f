"""Several USB 2.0 devices in one Verilator model: the top of ``sim:usb2?devices=N``.

The wrapper instantiates the one-device top (:data:`~busprobe.sim.usb2.simulator_build.TOPLEVEL`:
the busprobe gateware on its ULPI PHY model, the board's design) ``N`` times on one
``clk``/``rst``; device ``i``'s other ports (the PHY model's host side) appear as
``dev<i>_<port>``. :class:`DevicePorts` shows one device's ports under their one-device names, so
the ULPI PHY driver and everything above it drive device ``i`` unchanged. How the devices are
attached (one bus behind a hub, or a root port each) is the host model's business
(:mod:`busprobe.sim.usb2.multi_session`), not the model's: one build serves both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..sim_top import model_ports
from ..verilator_build import build_root, build_verilator_model
from .simulator_build import TOPLEVEL, usb2_sim_top

__all__ = ["MULTI_TOPLEVEL", "MAX_DEVICES", "write_multi_top", "build_usb2_multi_simulator",
           "DevicePorts", "port_prefix"]

MULTI_TOPLEVEL = "usb2_sim_multi"
#: Devices one simulation hosts at most (each is a whole design; the bus is shared behind a hub).
MAX_DEVICES = 2
_SHARED = ("clk", "rst")


def port_prefix(index: int) -> str:
    """The prefix of device ``index``'s ports on the multi top."""
    return f"dev{index}_"


def write_multi_top(top: Path, devices: int, out_dir: Path) -> Path:
    """Write the wrapper of ``devices`` instances of the one-device top in ``top``."""
    ports = [(name, direction, width) for name, (direction, width)
             in model_ports(top, TOPLEVEL).items() if name not in _SHARED]
    decls = ["    input  logic clk", "    input  logic rst"]
    body = []
    for i in range(devices):
        conns = [".clk(clk)", ".rst(rst)"]
        for name, direction, width in ports:
            bits = f"[{width - 1}:0] " if width > 1 else ""
            decls.append(f"    {direction:<6} logic {bits}{port_prefix(i)}{name}")
            conns.append(f".{name}({port_prefix(i)}{name})")
        body.append(f"    {TOPLEVEL} dev{i} (\n        " + ",\n        ".join(conns) + ");")
    text = (f"// {devices} USB 2.0 devices on one clock (busprobe.sim.usb2.multi_top)\n"
            f"module {MULTI_TOPLEVEL} (\n" + ",\n".join(decls) + "\n);\n"
            + "\n".join(body) + "\nendmodule\n")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{MULTI_TOPLEVEL}_{devices}.sv"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def build_usb2_multi_simulator(devices: int, design: str = "busprobe") -> Path:
    """Generate the design, its one-device top and the wrapper; build (or reuse) the model."""
    from busprobe.gateware.usb2.sim_top import TOP_NAMES, generate_verilog

    from .simulator_build import PHY_SOURCE

    verilog = generate_verilog(build_root() / "gateware" / "usb2", design=design)
    tops = build_root() / "sim" / "tops"
    top = usb2_sim_top(TOP_NAMES[design]).write(tops)
    wrapper = write_multi_top(top, devices, tops)
    return build_verilator_model(f"usb2-x{devices}-{design}", [verilog, PHY_SOURCE, top, wrapper],
                                 MULTI_TOPLEVEL, public_ports_only=True)


class DevicePorts:
    """Device ``index``'s ports of the multi top, under the one-device top's names (``clk`` and
    ``rst`` are the shared ones), for :class:`~busprobe.sim.usb2.phy.UlpiPhyDriver`.

    Parameters
    ----------
    dut : cocotb handle
        The :data:`MULTI_TOPLEVEL` instance.
    index : int
        The device.
    """

    def __init__(self, dut: Any, index: int) -> None:
        self._dut = dut
        self._prefix = port_prefix(index)

    def __getattr__(self, name: str) -> Any:
        if name in _SHARED:
            return getattr(self._dut, name)
        return getattr(self._dut, self._prefix + name)
