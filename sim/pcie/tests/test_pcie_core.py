"""pytest entry to the cocotb tests of the PCIe core (pcie_core_cocotb.py), one model per run."""

from __future__ import annotations

from pathlib import Path

import pytest
from busprobe.protocol import pcie as proto

HERE = Path(__file__).resolve().parent
COCOTB_MODULE = "pcie_core_cocotb"



def run_cocotb(model: Path, testcase: str, run_name: str, **params) -> list[dict]:
    from busprobe.sim.pcie.runner import run_cocotb as run

    return run(model, HERE, COCOTB_MODULE, testcase, run_name, **params)


def test_the_contracts_csr_map_is_what_litex_exports_for_the_core_now():
    """The committed pcie_csr_map.json is LiteX's export of the design as it is (regenerate it
    with ``python -m busprobe.gateware.pcie.csr_export``), its regions are the contract's, and
    busprobe's block is laid out in BUSPROBE_CSRS order."""
    import json
    from importlib import resources

    from busprobe.gateware.pcie.csr_export import csr_map

    exported = csr_map()
    committed = json.loads((resources.files("busprobe.protocol") / "pcie_csr_map.json")
                           .read_text())
    assert exported == committed, "stale: run python -m busprobe.gateware.pcie.csr_export"
    assert committed["bases"] == {n: i * proto.CSR_REGION_SIZE
                                  for n, i in proto.CSR_REGIONS.items()}
    busprobe = {name: reg["offset"] for name, reg in committed["registers"].items()
                if name.startswith("busprobe_")}
    base = committed["bases"]["busprobe"]
    assert busprobe == {f"busprobe_{name}": base + 4 * index
                        for index, (name, _) in enumerate(proto.BUSPROBE_CSRS)}
    assert max(proto.CSRS.values()) < proto.BAR0_SIZE


@pytest.mark.sim
def test_enumeration_and_bar0_access(pcie_model):
    run_cocotb(pcie_model, "enumeration_and_bar0", "default")


@pytest.mark.sim
@pytest.mark.parametrize(("mps", "pattern"), [
    (128, "COUNTER"), (256, "PRBS31"), (512, "PRBS31"), (512, "COUNTER"),
])
def test_dma_write_is_the_pattern_in_tlps_no_larger_than_mps(pcie_model, mps, pattern):
    run_cocotb(pcie_model, "dma_write_data", f"{mps}-{pattern}", mps=mps, pattern=pattern,
               length=8192, chunk=4096)


@pytest.mark.sim
@pytest.mark.parametrize(("mrrs", "split", "pattern", "latency_ns"), [
    (512, False, "COUNTER", 0), (512, False, "PRBS31", 0), (128, True, "PRBS31", 0),
    (512, True, "COUNTER", 2000),
])
def test_dma_read_honours_mrrs_and_reassembles_rcb_completions(pcie_model, mrrs, split,
                                                                pattern, latency_ns):
    run_cocotb(pcie_model, "dma_read_data", f"{mrrs}-{split}-{pattern}-{latency_ns}", mrrs=mrrs,
               split_on_all_rcb=split, pattern=pattern, latency_ns=latency_ns, length=8192,
               chunk=4096)


@pytest.mark.sim
@pytest.mark.parametrize(("direction", "rx_pause", "tx_pause"), [
    ("write", [1, 0, 0, 1, 1, 0, 0, 0], [0, 1, 1, 0, 0, 1, 0, 0, 0, 1]),
    ("read", [1, 1, 0, 0, 0, 1, 0], [0, 0, 1, 0, 1]),
])
def test_dma_survives_stalls_on_both_phy_streams(pcie_model, direction, rx_pause, tx_pause):
    testcase = "dma_write_data" if direction == "write" else "dma_read_data"
    run_cocotb(pcie_model, testcase, "stall", pattern="PRBS31", length=8192, chunk=2048,
               rx_pause=rx_pause, tx_pause=tx_pause)


@pytest.mark.sim
@pytest.mark.parametrize("pattern", ["COUNTER", "PRBS31"])
def test_dma_loopback_returns_the_data_read(pcie_model, pattern):
    run_cocotb(pcie_model, "dma_loopback_data", pattern, pattern=pattern, length=16384,
               chunk=4096)


@pytest.mark.sim
def test_msi_is_sent_when_a_descriptor_with_irq_completes(pcie_model):
    run_cocotb(pcie_model, "msi_when_a_descriptor_completes", "writer")


@pytest.mark.sim
def test_checker_counts_one_corrupted_word_once(pcie_model):
    run_cocotb(pcie_model, "checker_counts_one_corrupted_word_once", "prbs", pattern="PRBS31")


@pytest.mark.sim
def test_dma_that_never_completes_is_reported_as_timeout(pcie_model):
    run_cocotb(pcie_model, "dma_that_never_completes_times_out", "default")
