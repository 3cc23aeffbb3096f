"""cocotb test: cocotbext-pcie's root complex trains, enumerates and configures the gate-level
netlist of the Versa's soft PCIe endpoint build, and writes into its BAR0 (model:
:mod:`busprobe.sim.netlist.pcie`; bench: :mod:`busprobe.sim.pcie.symbol.dcu_wire`). Figures go
to ``$BUSPROBE_NETLIST_PCIE_FIGURES`` (JSON lines)."""

from __future__ import annotations

import json
import os
import time

import cocotb
from busprobe.protocol import pcie
from busprobe.protocol import pcie_config as cfg
from busprobe.protocol.pci_config import encode_size
from busprobe.sim.pcie.symbol.dcu_wire import DcuBench
from cocotb.triggers import ClockCycles
from cocotbext.pcie.core.caps.common import PciCapId
from cocotbext.pcie.core.tlp import CplStatus, Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId

ENDPOINT = PcieId(1, 0, 0)
TIMEOUT_US = 50
MPS, MRRS = 256, 512
APP, UR = "TLP for BAR0 (toggles)", "unsupported request answered (toggles)"


@cocotb.test(timeout_time=3_000, timeout_unit="us")
async def the_root_complex_trains_enumerates_and_writes_bar0_of_the_netlist(dut):
    started = time.monotonic()
    bench = await DcuBench.start(dut, link=1, lane=0)
    dl_active = await bench.until_dl_active()
    assert bench.led("physical link up (L0)") and bench.led("DCU receiver locked")
    assert bench.led("receiver detected")
    rc = bench.rc
    await rc.enumerate(timeout=TIMEOUT_US, timeout_unit="us")
    enumerated = bench.cycles
    function = rc.find_device(ENDPOINT)
    assert function is not None, rc.host_bridge.to_str()
    assert (function.vendor_id, function.device_id) == (pcie.VENDOR_ID, pcie.DEVICE_ID)
    assert [cap for cap, _ in function.capabilities] == [PciCapId.PM, PciCapId.MSI,
                                                         PciCapId.EXP]
    assert function.bar_size[0] == pcie.BAR0_SIZE and function.bar_addr[0] != 0
    assert not bench.led("memory space enabled")
    await function.enable_device()
    assert bench.led("memory space enabled")
    await function.set_mps(encode_size(MPS))
    await function.set_readrq(encode_size(MRRS))
    devctl = await function.capability_read_word(PciCapId.EXP, cfg.EXP_DEVCTL)
    assert devctl >> cfg.DEVCTL_MPS_SHIFT & 7 == encode_size(MPS)
    assert devctl >> cfg.DEVCTL_MRRS_SHIFT & 7 == encode_size(MRRS)

    # Three writes into BAR0: the application's LED toggles once a TLP.
    bar0 = function.bar_addr[0]
    for offset, size in ((0x10, 4), (0x100, 64), (0x800, 128)):
        await rc.mem_write(bar0 + offset, bytes(range(size)))
    for _ in range(2_000):
        if bench.toggles[APP] == 3:
            break
        await ClockCycles(dut.pclk, 1)
    assert bench.toggles[APP] == 3, bench.toggles
    # A read past BAR0: an Unsupported Request completion, and its LED toggles.
    req = Tlp()
    req.fmt_type = TlpType.MEM_READ
    req.requester_id = PcieId(0, 0, 0)
    req.set_addr_be(bar0 + pcie.BAR0_SIZE, 4)
    completions = await rc.perform_nonposted_operation(req, TIMEOUT_US, "us")
    assert [(c.status, c.completer_id) for c in completions] == [(CplStatus.UR, ENDPOINT)]
    await ClockCycles(dut.pclk, 8)
    assert bench.toggles[UR] == 1 and bench.toggles[APP] == 3, bench.toggles
    # Nothing bad on the wire either way.
    port = bench.port
    assert all(p.status == "good" for p in port.received), \
        [p for p in port.received if p.status != "good"]
    assert port.bad_tlps == port.bad_dllps == 0 and port.partner.state == "l0"
    path = os.environ.get("BUSPROBE_NETLIST_PCIE_FIGURES")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({
                "test": "netlist", "dl_active_pclk": dl_active, "enumerated_pclk": enumerated,
                "pclk": bench.cycles, "stepped_pclk": bench.stepped,
                "wall_seconds": round(time.monotonic() - started, 1),
                "requests": port.next_transmit_seq}) + "\n")
