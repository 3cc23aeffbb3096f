"""Board registry and pin descriptions: every board names real designs, platforms and pins."""

import importlib

import pytest
from busprobe.bitstream.designs import DESIGNS, get_design
from busprobe.gateware.boards import BOARDS, get_board
from busprobe.gateware.boards.constraints import load_constraints


def test_unknown_board_error_names_the_known_boards():
    with pytest.raises(ValueError, match="unknown board 'nope'.*cynthion-r1.4.*xilinx-ac701"):
        get_board("nope")


def test_unknown_design_error_names_the_known_designs():
    with pytest.raises(ValueError, match="unknown design 'usb9'.*usb2-stock"):
        get_design("usb9")


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_every_board_has_an_importable_platform_and_known_designs(name):
    board = BOARDS[name]
    module, _, cls = board.platform.partition(":")
    platform_class = getattr(importlib.import_module(module), cls)
    assert set(board.designs) <= set(DESIGNS)
    platform = platform_class()
    # The PHY the design goes on exists on the platform (Amaranth or LiteX resource lists).
    if board.family == "ecp5":
        assert (board.phy, 0) in platform.resources
    else:
        assert any(io[0] == board.phy for io in platform.constraint_manager.available)


def test_every_design_class_is_importable():
    for design in DESIGNS.values():
        assert isinstance(design.load(), type)


def test_cynthion_target_phy_is_a_ulpi_bus_with_the_fpga_driving_its_clock():
    pins = load_constraints("cynthion_r1_4")
    target = pins.resource("target_phy")
    assert target["kind"] == "ulpi" and target["clk_dir"] == "o"
    assert len(target["data"].split()) == 8
    (resource,) = [r for r in pins.amaranth_resources() if r.name == "target_phy"]
    directions = {sub.name: sub.ios[0].dir for sub in resource.ios}
    assert directions == {"data": "io", "clk": "o", "dir": "i", "nxt": "i", "stp": "o",
                          "rst": "o"}
    assert pins.ulpi_extra_registers == {0x39: 0b000110}  # USB3343 D+/D- swap


def test_cynthion_platform_requests_the_phy_with_resource_style_subfields():
    from busprobe.gateware.boards.cynthion import CynthionR14Platform

    platform = CynthionR14Platform()
    bus = platform.request("target_phy", 0)
    assert hasattr(bus.clk, "o") and hasattr(bus.data, "oe") and hasattr(bus.dir, "i")
    assert platform.default_clk_frequency == 60e6
    assert (platform.device, platform.package, platform.speed) == ("LFE5U-12F", "BG256", "8")


def test_no_two_pins_of_cynthion_constraints_collide():
    pins = load_constraints("cynthion_r1_4")
    seen = {}
    for table in pins.resources:
        fields = ("pins",) if "pins" in table else ("data", "clk", "dir", "nxt", "stp", "rst")
        for field in fields:
            for pin in table.get(field, "").split():
                assert pin not in seen, f"{pin} in {table['name']} and {seen[pin]}"
                seen[pin] = table["name"]
