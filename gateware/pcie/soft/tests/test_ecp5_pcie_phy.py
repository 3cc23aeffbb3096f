"""The soft endpoint on an ECP5 DCU channel: the PHY elaborates with the soft link onto LUNA's
DCU retuned for PCIe Gen1, with the detection port wired and each block in its clock domain
(no simulation: the DCU is a vendor primitive; no tool run: yosys is run by hand, DESIGN §3.10)."""

import re
from types import SimpleNamespace

from amaranth import Module, Signal
from amaranth.back import rtlil
from amaranth.hdl import Fragment
from amaranth.lib import data
from busprobe.gateware.common.fragment_domains import fragment_domains
from busprobe.gateware.pcie.soft.data_link import SoftDataLink
from busprobe.gateware.pcie.soft.ecp5_pcie_phy import (
    GEN1_PARAMETERS,
    Ecp5PciePhy,
)
from busprobe.gateware.pcie.soft.ltssm import LtssmTiming


def _pads():
    return SimpleNamespace(p=Signal(name="p"), n=Signal(name="n"))


def endpoint_on_the_dcu(**phy_options):
    """``SoftDataLink`` (the link at four symbols a clock, the only one) on ``Ecp5PciePhy``'s
    word side at the spec's timing, and the ports a top keeps: the pads, the reference clock
    and the link's transaction-layer side."""
    m = Module()
    tx_pads, rx_pads = _pads(), _pads()
    m.submodules.link = link = SoftDataLink(timing=LtssmTiming.spec())
    m.submodules.phy = phy = Ecp5PciePhy(tx_pads=tx_pads, rx_pads=rx_pads,
                                         **phy_options)
    phy.connect_link(m, link)
    ports = [tx_pads.p, tx_pads.n, rx_pads.p, rx_pads.n, phy.refclk]
    ports += [value for name, value in _signals(link) if name[0] not in ("rx", "tx")]
    return m, phy, ports


def _signals(component):
    """(path, signal) of every port of ``component`` that is a signal (structured payloads as
    their underlying signal; an always-ready stream's constant ``ready`` left out)."""
    for name, _, value in component.signature.flatten(component):
        if isinstance(value, data.View):
            value = value.as_value()
        if isinstance(value, Signal):
            yield name, value


def test_the_dcu_is_retuned_for_gen1_with_its_detection_port_wired():
    top, _, ports = endpoint_on_the_dcu(dual=1, channel=0)
    text = rtlil.convert(top, ports=ports, name="endpoint")
    dcu = text[text.index("cell \\DCUA"):]
    dcu = dcu[:dcu.index("\n  end")]
    for name, value in GEN1_PARAMETERS.items():
        assert f'parameter \\{name.replace("CHX", "CH0")} "{value}"' in dcu, name
    # LUNA's values for the rest, among them the protocol and its 1:2 gearing both ways.
    assert 'parameter \\CH0_PROTOCOL "G8B10B"' in dcu
    for gear in ("RX", "TX"):
        assert f'parameter \\CH0_{gear}_GEAR_MODE "0b1"' in dcu
    for port in ("FFC_PCIE_DET_EN", "FFC_PCIE_CT", "FFS_PCIE_DONE", "FFS_PCIE_CON", "FFS_RLOS"):
        assert re.search(rf"connect \\CH0_{port} \\\S+", dcu), port
    assert 'attribute \\LOC "DCU1"' in text


def test_the_word_link_crosses_to_the_dcus_clock_in_the_gearbox_with_its_scramblers_on_its_own():
    top, phy, ports = endpoint_on_the_dcu(control_domain="ctl")
    domains = list(fragment_domains(Fragment.get(top, None)))
    # The scramblers work on whole words at the link's clock; on the DCU's only the halves
    # are split and paired, and what reads the DCU's detection and status.
    on_link = {path for path, domain in domains if domain == "sync"}
    assert {"phy/gearbox", "phy/gearbox/scrambler", "phy/gearbox/descrambler"} <= on_link
    assert {path for path, domain in domains if domain == "pclk"} == {
        "phy/gearbox", "phy/gearbox/tx_fifo", "phy/gearbox/tx_fifo/produce_cdc",
        "phy/gearbox/rx_fifo", "phy/gearbox/rx_fifo/consume_cdc",
        "phy/gearbox/rx_fifo/storage",
        "phy/detector", "phy/detector/done_sync", "phy/detector/con_sync",
        "phy/rx_ready_sync", "phy/los_sync"}
    # LUNA's reset sequencer and register interface on the control clock, not the DCU's.
    on_control = {path for path, domain in domains if domain == "ctl"}
    assert {"phy/serdes", "phy/serdes/sci", "phy/serdes/sci_trans"} <= on_control
    assert {domain for _, domain in domains} == {"comb", "sync", "pclk", "ctl", "async_ff"}
    assert "module" in rtlil.convert(top, ports=ports, name="word_endpoint_on_the_dcu")
