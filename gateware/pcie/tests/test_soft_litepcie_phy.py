"""``SoftPCIEPHY`` offers the core what ``SimPCIEPHY`` (and S7PCIEPHY) offer, so the same core
and CSR map sit on the soft endpoint (the Verilator bench that runs DMA over it is
sim/pcie/tests/test_dma_over_the_soft_endpoint.py)."""

from __future__ import annotations

import json
from importlib import resources

from busprobe.gateware.pcie.csr_export import csr_map_of
from busprobe.gateware.pcie.sim_top import build_sim_soc, generate_verilog
from busprobe.gateware.pcie.soft.litepcie_endpoint import PORTS
from busprobe.gateware.pcie.soft.litepcie_phy import MODULE, SoftPCIEPHY, soft_phy_io
from busprobe.protocol import pcie as proto


def soft_phy(verilog_dir):
    def make(platform):
        return SoftPCIEPHY(platform, platform.request("pcie_soft"), verilog_dir=verilog_dir)
    return make


def test_soft_phy_has_the_sim_phys_streams_sizes_and_csrs(tmp_path):
    sim = build_sim_soc().pcie_phy
    soc = build_sim_soc(soft_phy(tmp_path), soft_phy_io())
    soft = soc.pcie_phy
    for name in ("endianness", "qword_aligned", "data_width", "bar0_mask"):
        assert getattr(soft, name) == getattr(sim, name), name
    for name in ("sink", "msi"):
        assert getattr(soft, name).description.payload_layout == \
            getattr(sim, name).description.payload_layout, name
    # Every PHY's six registers in the same order, then the soft link's own.
    assert [csr.name for csr in soft.get_csrs()] == [csr.name for csr in sim.get_csrs()] + [
        name for name, _ in proto.SOFT_LINK_CSRS]
    assert set(soft.link_state) == set(sim.link_state)
    # The link's pads are words: four 9-bit symbols and the wire's state, each way.
    assert PORTS["rx_word"] == ("i", 37) and PORTS["tx_word"] == ("o", 37)
    # The endpoint's Verilog is among the platform's sources, written once in verilog_dir.
    sources = [path for path, _, _ in soc.platform.sources]
    assert [p for p in sources if p.startswith(str(tmp_path))] == \
        [str(p) for p in tmp_path.glob(f"{MODULE}-*.v")]


def test_the_core_on_the_soft_phy_exports_the_protocol_csr_map(tmp_path):
    generate_verilog(tmp_path / "out", toplevel="soft_top", make_phy=soft_phy(tmp_path),
                     phy_io=soft_phy_io())
    committed = json.loads(
        (resources.files("busprobe.protocol") / "pcie_csr_map.json").read_text())
    exported = csr_map_of(tmp_path / "out" / "csr.json")
    # The committed map's registers where it has them; the soft link's after them, where
    # protocol.pcie.soft_link_csr says.
    # (LiteX names the PHY's registers twice, as the PHY's and as the endpoint's PHY.)
    link = {f"{prefix}_{name}" for name, _ in proto.SOFT_LINK_CSRS
            for prefix in ("pcie_phy_phy", "pcie_endpoint_phy")}
    registers = exported["registers"]
    assert {name: registers[f"pcie_phy_phy_{name}"]["offset"]
            for name, _ in proto.SOFT_LINK_CSRS} == {
        name: proto.soft_link_csr(name) for name, _ in proto.SOFT_LINK_CSRS}
    exported["registers"] = {k: v for k, v in registers.items() if k not in link}
    assert exported == committed
