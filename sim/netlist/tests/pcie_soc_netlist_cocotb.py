"""cocotb test: the gate-level netlist of the Versa's PCIe SoC build (``--design pcie``: LitePCIe's
DMA engine, busprobe's CSRs, VexRiscv, around the soft endpoint on the DCU) trains against
cocotbext-pcie's root complex, is enumerated, and moves 64 KiB each way through the DMA engine
with the data checked end to end (model: :mod:`busprobe.sim.netlist.pcie`, design ``pcie``;
bench: :class:`~busprobe.sim.pcie.symbol.dcu_wire.DcuBench` under
:class:`~busprobe.sim.pcie.symbol.soc_bench.SoftSocHost`, the host the RTL SoC tests use).

The RTL bench reads the link's counters from the SoC's top-level ports; the netlist has none,
so they are read where a driver reads them, from BAR0 (:data:`~busprobe.protocol.pcie.
SOFT_LINK_CSRS`), and the link's state from the LEDs. Figures go to
``$BUSPROBE_NETLIST_PCIE_SOC_FIGURES`` (JSON lines): DCU clocks (8 ns each), MB/s of simulated
time, wall time.
"""

from __future__ import annotations

import json
import os
import time

import cocotb
from busprobe.gateware.boards.versa_pcie_soc import SOC_LEDS
from busprobe.protocol import pcie as proto
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sim.pcie.dma_regs import DmaRegisters
from busprobe.sim.pcie.symbol.dcu_wire import PCLK_PS, DcuBench
from busprobe.sim.pcie.symbol.soc_bench import SoftSocHost

LENGTH = 64 * 1024
CHUNK = 4096  # bytes a descriptor
MPS, MRRS = 256, 512
MSI_ENABLE = 1 << proto.MSI_WRITER | 1 << proto.MSI_READER
#: DCU clocks a direction may take: 64 KiB at Gen1 is some 37,000 (0.3 ms).
DMA_CYCLES = 400_000
#: Counters of the link that must stay 0 (BAR0, SOFT_LINK_CSRS).
CLEAN = ("naks", "protocol_errors", "overflows", "unsupported_requests", "msi_dropped")


async def queue(regs: DmaRegisters, engine: str, address: int) -> None:
    """``LENGTH`` bytes at ``address`` in ``CHUNK`` descriptors, an MSI on the last."""
    await regs.reset(engine)
    for offset in range(0, LENGTH, CHUNK):
        await regs.queue(engine, address + offset, CHUNK, irq=offset + CHUNK == LENGTH)


def mb_s(cycles: int) -> float:
    """MB/s of simulated time for ``LENGTH`` bytes in ``cycles`` DCU clocks."""
    return round(LENGTH / (cycles * PCLK_PS * 1e-12) / 1e6, 1)


async def link_counters(host: SoftSocHost) -> dict[str, int]:
    return {name: await host.read32(proto.soft_link_csr(name))
            for name, _ in proto.SOFT_LINK_CSRS[2:]}


@cocotb.test(timeout_time=8_000, timeout_unit="us")
async def the_soc_netlist_moves_64_kib_each_way_through_its_dma_engine(dut):
    started = time.monotonic()
    bench = await DcuBench.start(dut, leds=SOC_LEDS, link=1, lane=0)
    dl_active = await bench.until_dl_active()
    assert bench.led("physical link up (L0)") and bench.led("receiver detected")
    dl_wall = time.monotonic() - started
    host = await SoftSocHost.over(bench, mps=MPS, mrrs=MRRS)
    enumerated = bench.cycles
    assert await host.read32(proto.csr("busprobe_magic")) == proto.MAGIC
    assert await host.read32(proto.soft_link_csr("soft_link")) == proto.SOFT_LINK_MAGIC
    assert await host.read32(proto.csr("pcie_phy_phy_max_payload_size")) == MPS
    assert await host.read32(proto.csr("pcie_phy_phy_max_request_size")) == MRRS
    assert await host.read32(proto.csr("pcie_phy_phy_link_status")) & 1 == 1
    regs = DmaRegisters(host)
    await host.write32(proto.csr("pcie_msi_enable"), MSI_ENABLE)
    await regs.set_pattern(Pattern.PRBS31)
    await regs.clear_telemetry()

    # Device to host: the pattern generator's bytes in host memory, then the MSI.
    written = host.alloc(LENGTH)
    await queue(regs, "writer", written.address)
    begin = bench.cycles
    await regs.enable("writer")
    write_cycles = await host.until_msi(1, cycles=DMA_CYCLES) - begin
    await regs.enable("writer", False)
    assert written.read() == PatternStream(Pattern.PRBS31).take(LENGTH)
    vector = await host.read32(proto.csr("pcie_msi_vector"))
    await host.write32(proto.csr("pcie_msi_clear"), vector)

    # Host to device: the same pattern read back into the checker.
    source = host.alloc(LENGTH)
    source.write(0, PatternStream(Pattern.PRBS31).take(LENGTH))
    await regs.set_pattern(Pattern.PRBS31)  # restarts the checker
    await queue(regs, "reader", source.address)
    begin = bench.cycles
    await regs.enable("reader")
    await host.until_msi(2, cycles=DMA_CYCLES)  # the last request sent
    await regs.wait_counter("checked_bytes", LENGTH, timeout_s=DMA_CYCLES * PCLK_PS * 1e-12,
                            poll_cycles=64)
    read_cycles = bench.cycles - begin
    await regs.enable("reader", False)
    assert await host.read32(proto.csr("busprobe_pattern_errors")) == 0
    assert await regs.link_errors() == {}

    # Nothing bad on the wire either way, nothing NAKed, dropped or unsupported.
    port = bench.port
    assert all(p.status == "good" for p in port.received), \
        [p for p in port.received if p.status != "good"][:4]
    assert port.bad_tlps == port.bad_dllps == 0 and port.partner.state == "l0"
    counters = await link_counters(host)
    assert not any(counters[name] for name in CLEAN), counters
    assert counters["msi_sent"] == host.msi_count == 2, (counters, host.msi_count)
    path = os.environ.get("BUSPROBE_NETLIST_PCIE_SOC_FIGURES")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({
                "test": "netlist_soc", "mps": MPS, "mrrs": MRRS, "bytes": LENGTH,
                "dl_active_pclk": dl_active, "dl_active_wall_seconds": round(dl_wall, 1),
                "enumerated_pclk": enumerated,
                "write_pclk": write_cycles, "write_mb_s": mb_s(write_cycles),
                "read_pclk": read_cycles, "read_mb_s": mb_s(read_cycles),
                "pclk": bench.cycles, "stepped_pclk": bench.stepped,
                "toggles": bench.toggles, "counters": counters,
                "wall_seconds": round(time.monotonic() - started, 1)}) + "\n")
