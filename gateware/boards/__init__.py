"""Boards busprobe builds for: one small description each, looked up by name.

A description is data (no Amaranth/LiteX import), so ``busprobe flash`` works on a host-only
install; the platform class is named as ``"module:Class"`` and imported only by the build flow.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Board", "BOARDS", "get_board", "board_names"]


@dataclass(frozen=True)
class Board:
    """One FPGA board.

    Attributes
    ----------
    name : str
        Name used on the command line (``--board``).
    title : str
        Human-readable name.
    family : str
        ``"ecp5"`` (built here with YoWASP) or ``"xc7"`` (LiteX generates, Vivado builds).
    designs : tuple of str
        ``--design`` values this board can carry.
    platform : str
        ``"module:Class"`` of the Amaranth or LiteX platform.
    phy : str
        Name of the platform resource the design's bus goes on (ULPI PHY, PCIe lanes).
    fpga : str
        FPGA part, as the bitstream records it (checked before flashing).
    programmer : str
        ``"apollo"`` (Cynthion's debug controller) or ``"openfpgaloader"``.
    loader_board : str or None
        openFPGALoader's ``-b`` name for the board.
    loader_cable : str or None
        openFPGALoader's ``-c`` cable, for a board it has no ``-b`` name for.
    bitstream_suffix : str
        Suffix of the file the flow produces and the programmer takes.
    """

    name: str
    title: str
    family: str
    designs: tuple[str, ...]
    platform: str
    phy: str
    fpga: str
    programmer: str
    loader_board: str | None = None
    loader_cable: str | None = None
    bitstream_suffix: str = ".bit"


BOARDS: dict[str, Board] = {board.name: board for board in (
    Board(
        name="cynthion-r1.4", title="Great Scott Gadgets Cynthion r1.4", family="ecp5",
        designs=("usb2", "usb2-full", "usb2-storage", "usb2-stock"),
        platform="busprobe.gateware.boards.cynthion:CynthionR14Platform",
        phy="target_phy", fpga="LFE5U-12F", programmer="apollo"),
    Board(
        # Pins: amaranth-boards' ECPIX-5 platform (ULPI PHY with its own 60 MHz clock); usb3
        # adds the USB-C SuperSpeed lanes on the DCU (gateware/usb3/board_top.py).
        name="ecpix5-85", title="LambdaConcept ECPIX-5 85F", family="ecp5",
        designs=("usb2", "usb2-full", "usb2-storage", "usb2-stock", "usb3", "usb3-storage"),
        platform="amaranth_boards.ecpix5:ECPIX585Platform",
        phy="ulpi", fpga="LFE5UM5G-85F", programmer="openfpgaloader", loader_board="ecpix5"),
    Board(
        # The soft PCIe endpoint on the x1 edge connector (DCU0 channel 0, gateware/boards/
        # versa_pcie.py). openFPGALoader has no board entry for the Versa (its doc/boards.yml
        # and src/board.hpp, checked 2026-12): the on-board FT2232H (0403:6010, JTAG on
        # interface A) is its generic `ft2232` cable.
        name="versa-ecp5-5g", title="Lattice ECP5-5G Versa (LFE5UM5G-45F)", family="ecp5",
        designs=("pcie-endpoint", "pcie"),
        platform="busprobe.gateware.boards.versa_pcie:VersaPciePlatform",
        phy="pcie_x1", fpga="LFE5UM5G-45F", programmer="openfpgaloader", loader_cable="ft2232"),
    Board(
        # PCIe x1 lane of the AC701's x4 edge: litex-boards defines a `pcie_x1` resource for it.
        name="xilinx-ac701", title="Xilinx AC701 (Artix-7 XC7A200T)", family="xc7",
        designs=("pcie",),
        platform="litex_boards.platforms.xilinx_ac701:Platform",
        phy="pcie_x1", fpga="7a200tfbg676", programmer="openfpgaloader", loader_board="ac701"),
)}


def board_names() -> list[str]:
    return sorted(BOARDS)


def get_board(name: str) -> Board:
    """The board called ``name``; :class:`ValueError` with the known names otherwise."""
    try:
        return BOARDS[name]
    except KeyError:
        raise ValueError(f"unknown board {name!r} (known: {', '.join(board_names())})") from None
