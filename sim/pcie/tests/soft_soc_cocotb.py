"""cocotb tests: busprobe's PCIe SoC on the soft endpoint's LitePCIe PHY, driven by
cocotbext-pcie's root complex symbol by symbol (model: :mod:`busprobe.sim.pcie.symbol.soc_model`;
bench: :mod:`busprobe.sim.pcie.symbol.soc_bench`).

Each test resets the model, trains the link and enumerates from scratch. Figures go to
``$BUSPROBE_SOFT_SOC_FIGURES`` (JSON lines): symbol times, bytes, throughput at 2.5 GT/s
(one symbol time is 4 ns), wall time.
"""

from __future__ import annotations

import json
import os
import time

import cocotb
from busprobe.protocol import pcie as proto
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sim.pcie.dma_regs import DmaRegisters
from busprobe.sim.pcie.symbol.amaranth_bench import SYMBOL_PERIOD
from busprobe.sim.pcie.symbol.soc_bench import SoftSocHost, lane_census
from busprobe.sim.pcie.symbol.soc_model import LINK_CLOCK_HZ

LENGTH = 64 * 1024
CHUNK = 4096  # bytes a descriptor
MRRS = 512
#: Simulated time a test may take: 64 KiB each way at Gen1 is some 0.6 ms.
TEST_TIMEOUT_US = 3_000
MSI_ENABLE = 1 << proto.MSI_WRITER | 1 << proto.MSI_READER


def record(name: str, **figures) -> None:
    path = os.environ.get("BUSPROBE_SOFT_SOC_FIGURES")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({"test": name, **figures}) + "\n")


def assert_clean(host: SoftSocHost) -> None:
    """Nothing bad on the wire either way, nothing NAKed, replayed for a NAK or dropped."""
    bench = host.bench
    port = bench.port
    assert all(packet.status == "good" for packet in port.received), \
        [p for p in port.received if p.status != "good"][:4]
    assert port.bad_tlps == port.bad_dllps == 0
    for name in ("naks", "overflows", "unsupported_requests", "msi_dropped"):
        assert bench.output(name) == 0, (name, bench.output(name))
    assert port.partner.state == "l0"


async def clear_msi(host: SoftSocHost) -> None:
    vector = await host.read32(proto.csr("pcie_msi_vector"))
    await host.write32(proto.csr("pcie_msi_clear"), vector)


async def queue(regs: DmaRegisters, engine: str, address: int) -> None:
    """``LENGTH`` bytes at ``address`` in ``CHUNK`` descriptors, an MSI on the last."""
    await regs.reset(engine)
    for offset in range(0, LENGTH, CHUNK):
        await regs.queue(engine, address + offset, CHUNK, irq=offset + CHUNK == LENGTH)


def rate(symbols: int) -> float:
    """Bytes per second over ``symbols`` symbol times at 2.5 GT/s."""
    return LENGTH / (symbols * SYMBOL_PERIOD)


async def dma_write_then_read(dut, mps: int) -> None:
    started = time.monotonic()
    host = await SoftSocHost.start(dut, mps=mps, mrrs=MRRS)
    bench = host.bench
    regs = DmaRegisters(host)
    assert await host.read32(proto.csr("pcie_phy_phy_max_payload_size")) == mps
    assert await host.read32(proto.csr("pcie_phy_phy_max_request_size")) == MRRS
    await host.write32(proto.csr("pcie_msi_enable"), MSI_ENABLE)
    await regs.set_pattern(Pattern.PRBS31)
    await regs.clear_telemetry()

    # Device to host: the pattern generator's bytes in host memory, then the MSI.
    written = host.alloc(LENGTH)
    await queue(regs, "writer", written.address)
    begin = bench.cycles
    bench.tx_log = []  # the endpoint's lane while the writer runs
    await regs.enable("writer")
    end = await host.until_msi(1, cycles=40 * LENGTH)
    write_symbols = end - begin
    # Every MPS-sized MWr follows the one before with nothing between but DLLPs and SKP sets:
    # a symbol time lost inside the burst is a shortfall against the Gen1 model.
    lane = lane_census(bench.tx_log, burst_tlp=mps + 20)
    bench.tx_log = None
    assert lane["tlps"] >= LENGTH // mps and lane["idle_in_bursts"] == 0, lane
    await regs.enable("writer", False)
    assert written.read() == PatternStream(Pattern.PRBS31).take(LENGTH)
    await clear_msi(host)

    # Host to device: the same pattern read back into the checker.
    source = host.alloc(LENGTH)
    source.write(0, PatternStream(Pattern.PRBS31).take(LENGTH))
    await regs.set_pattern(Pattern.PRBS31)  # restarts the checker
    await queue(regs, "reader", source.address)
    begin = bench.cycles
    await regs.enable("reader")
    await host.until_msi(2, cycles=40 * LENGTH)  # the last request sent
    await regs.wait_counter("checked_bytes", LENGTH, timeout_s=40 * LENGTH * SYMBOL_PERIOD,
                            poll_cycles=64)
    read_symbols = bench.cycles - begin
    await regs.enable("reader", False)
    assert await host.read32(proto.csr("busprobe_pattern_errors")) == 0
    assert await regs.link_errors() == {}
    assert_clean(host)
    record(f"dma_mps{mps}", mps=mps, mrrs=MRRS, bytes=LENGTH,
           write_symbols=write_symbols, write_mb_s=round(rate(write_symbols) / 1e6, 1),
           write_lane=lane,
           read_symbols=read_symbols, read_mb_s=round(rate(read_symbols) / 1e6, 1),
           replays=bench.output("replays"), replay_timeouts=bench.output("replay_timeouts"),
           credit_blocked=bench.output("credit_blocked"), msi=host.msi_count,
           symbols=bench.cycles, wall_seconds=round(time.monotonic() - started, 1))


@cocotb.test(timeout_time=TEST_TIMEOUT_US, timeout_unit="us")
async def busprobe_identity_and_link_csrs_read_through_bar0(dut):
    started = time.monotonic()
    host = await SoftSocHost.start(dut, mps=256, mrrs=MRRS)
    assert await host.read32(proto.csr("busprobe_magic")) == proto.MAGIC
    assert await host.read32(proto.csr("busprobe_version")) == proto.PROTOCOL_VERSION
    assert await host.read32(proto.csr("busprobe_clock_hz")) == LINK_CLOCK_HZ
    link = await host.read32(proto.csr("pcie_phy_phy_link_status"))
    assert link & 1 == 1 and link >> 1 & 1 == 0 and link >> 2 & 3 == 0  # up, Gen1, x1
    assert await host.read32(proto.csr("pcie_phy_phy_bus_master_enable")) == 1
    assert await host.read32(proto.csr("pcie_phy_phy_msi_enable")) == 1
    assert_clean(host)
    record("identity", enumerated_symbols=host.enumerated_at, symbols=host.bench.cycles,
           wall_seconds=round(time.monotonic() - started, 1))


@cocotb.test(timeout_time=TEST_TIMEOUT_US, timeout_unit="us")
async def dma_write_and_read_of_64_kib_at_mps_128_are_intact_and_signal_msi(dut):
    await dma_write_then_read(dut, 128)


@cocotb.test(timeout_time=TEST_TIMEOUT_US, timeout_unit="us")
async def dma_write_and_read_of_64_kib_at_mps_256_are_intact_and_signal_msi(dut):
    await dma_write_then_read(dut, 256)
