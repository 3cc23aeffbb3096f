"""cocotb tests of the busprobe PCIe core against cocotbext-pcie (run by test_pcie_core.py).

Each test reads its parameters from the environment variable ``BUSPROBE_PCIE_CASE`` (JSON), set
by the pytest runner per parametrised case, so one test body serves many cases.
"""

from __future__ import annotations

import itertools
import json
import os
import time

import cocotb
from busprobe.protocol import pcie as proto
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sim.pcie.dma_regs import DmaRegisters
from busprobe.sim.pcie.testbench import LinkConfig, PcieTestbench
from busprobe.transport import TransferTimeout
from cocotbext.pcie.core.tlp import TlpType

#: Simulated-time limit of one test: a broken design fails instead of hanging the run.
TIMEOUT_US = float(os.environ.get("BUSPROBE_PCIE_TIMEOUT_US", "3000"))
MEM_WRITES = {TlpType.MEM_WRITE, TlpType.MEM_WRITE_64}
MEM_READS = {TlpType.MEM_READ, TlpType.MEM_READ_64}


def case() -> dict:
    return json.loads(os.environ.get("BUSPROBE_PCIE_CASE", "{}"))


def link_config(params: dict) -> LinkConfig:
    keys = {"gen", "width", "mps", "mrrs", "rcb", "split_on_all_rcb", "cap", "latency_ns",
            "tx_buffer"}
    return LinkConfig(**{k: v for k, v in params.items() if k in keys})


def pauses(params: dict, key: str):
    """A cocotbext-style pause generator: ``[1, 0, 0]`` idles one cycle in three."""
    pattern = params.get(key)
    return itertools.cycle(pattern) if pattern else None


async def started(dut, params: dict) -> tuple[PcieTestbench, DmaRegisters]:
    tb = PcieTestbench(dut, link_config(params))
    await tb.start()
    tb.ep.set_rx_pause_generator(pauses(params, "rx_pause"))
    tb.ep.set_tx_pause_generator(pauses(params, "tx_pause"))
    return tb, DmaRegisters(tb)


def report(dut, **values) -> None:
    """Results for the pytest side: one JSON line per test in $BUSPROBE_PCIE_RESULTS."""
    path = os.environ.get("BUSPROBE_PCIE_RESULTS")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(values) + "\n")
    dut._log.info("result %s", values)


async def dma_write(tb, regs, pattern: Pattern, length: int, chunk: int) -> tuple[bytes, float]:
    """Device writes ``length`` bytes of ``pattern`` to a host buffer; returns (data, seconds)."""
    buf = tb.alloc(length)
    await regs.reset("writer")
    await regs.set_pattern(pattern)
    await regs.clear_telemetry()
    for offset in range(0, length, chunk):
        await regs.queue("writer", buf.address + offset, min(chunk, length - offset))
    start_bytes = tb.rc.write_bytes
    start = tb.now()
    await regs.enable("writer")
    await regs.wait_host_written(start_bytes + length, timeout_s=length / 50e6 + 100e-6)
    seconds = tb.now() - start
    await regs.enable("writer", False)
    return buf.read(), seconds


async def dma_read(tb, regs, data: bytes, chunk: int) -> tuple[dict, float]:
    """Device reads ``data`` from a host buffer into its checker; returns (telemetry, seconds)."""
    buf = tb.alloc(len(data))
    buf.write(0, data)
    await regs.reset("reader")
    await regs.clear_telemetry()
    for offset in range(0, len(data), chunk):
        await regs.queue("reader", buf.address + offset, min(chunk, len(data) - offset))
    start = tb.now()
    await regs.enable("reader")
    # The data cannot arrive faster than the raw link rate: no polling traffic before then.
    raw_rate = {1: 250e6, 2: 500e6, 3: 984.6e6}[tb.config.gen] * tb.config.width
    await regs.wait_counter("checked_bytes", len(data), timeout_s=len(data) / 50e6 + 100e-6,
                            poll_cycles=50, not_before_s=len(data) / raw_rate)
    seconds = tb.now() - start
    await regs.enable("reader", False)
    return await regs.telemetry(), seconds


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def enumeration_and_bar0(dut):
    """The RC finds the device, assigns BAR0 and reaches every kind of CSR through it."""
    tb, regs = await started(dut, case())
    ids = await tb.config_read32(0)
    assert ids == proto.DEVICE_ID << 16 | proto.VENDOR_ID, hex(ids)
    assert tb.function.bar[0] is not None and tb.function.bar_size[0] == proto.BAR0_SIZE
    assert await tb.read32(proto.csr("busprobe_magic")) == proto.MAGIC
    assert await tb.read32(proto.csr("busprobe_version")) == proto.PROTOCOL_VERSION
    assert await tb.read32(proto.csr("busprobe_clock_hz")) == proto.CLOCK_HZ
    for value in (0x1234_5678, 0xA5A5_5A5A, 0):
        await tb.write32(proto.csr("ctrl_scratch"), value)
        assert await tb.read32(proto.csr("ctrl_scratch")) == value
    # The PHY CSRs show what config space negotiated.
    assert await tb.read32(proto.csr("pcie_phy_phy_max_payload_size")) == tb.config.mps
    assert await tb.read32(proto.csr("pcie_phy_phy_max_request_size")) == tb.config.mrrs
    assert await tb.read32(proto.csr("pcie_phy_phy_bus_master_enable")) == 1
    assert await tb.read32(proto.csr("busprobe_max_payload_size")) == tb.config.mps
    await tb.set_mps(128)
    assert await tb.read32(proto.csr("busprobe_max_payload_size")) == 128
    # Counters move: cycles runs, the BAR0 requests above were counted as received TLPs.
    first = await tb.read32(proto.csr("busprobe_cycles"))
    assert await tb.read32(proto.csr("busprobe_cycles")) > first
    assert await tb.read32(proto.csr("busprobe_rx_tlps")) > 10


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def dma_write_data(dut):
    """DMA writes land in host memory as exactly the selected pattern; TLPs respect MPS."""
    params = case()
    tb, regs = await started(dut, params)
    pattern = Pattern[params.get("pattern", "COUNTER")]
    length, chunk = params.get("length", 16384), params.get("chunk", 4096)
    tb.record_tlps = True
    data, seconds = await dma_write(tb, regs, pattern, length, chunk)
    tb.record_tlps = False
    result = PatternStream(pattern).check(data)
    assert result.errors == 0, f"{result.errors} bad words, first at {result.first_error_offset}"
    writes = [t for t in tb.tx_tlps if t.fmt_type in MEM_WRITES]
    sizes = {t.length * 4 for t in writes}
    assert max(sizes) <= tb.config.mps, sizes
    assert max(sizes) == min(tb.config.mps, chunk), sizes  # full-size TLPs, not smaller
    assert sum(t.length * 4 for t in writes) == length
    tel = await regs.telemetry()
    assert tel["wr_bytes"] == length and tel["wr_tlps"] == len(writes)
    assert tel["generated_bytes"] >= length
    report(dut, **{**params, "test": "dma_write_data", "seconds": seconds, "bytes": length,
                   "telemetry": tel})


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def dma_read_data(dut):
    """The checker sees the host's pattern intact; requests respect MRRS; completions (split at
    the RCB when asked) are reassembled in order."""
    params = case()
    tb, regs = await started(dut, params)
    pattern = Pattern[params.get("pattern", "COUNTER")]
    length, chunk = params.get("length", 16384), params.get("chunk", 4096)
    await regs.set_pattern(pattern)
    tb.record_tlps = True
    tel, seconds = await dma_read(tb, regs, PatternStream(pattern).take(length), chunk)
    tb.record_tlps = False
    assert tel["pattern_errors"] == 0 and tel["first_error_offset"] == proto.NO_ERROR_OFFSET
    assert tel["checked_bytes"] == length
    requests = [t for t in tb.tx_tlps if t.fmt_type in MEM_READS]
    sizes = {t.length * 4 for t in requests}
    assert max(sizes) == min(tb.config.mrrs, chunk), sizes
    assert sum(t.length * 4 for t in requests) == length
    completions = [t for t in tb.rx_tlps if t.fmt_type == TlpType.CPL_DATA]
    if tb.config.split_on_all_rcb:
        assert max(t.length * 4 for t in completions) <= tb.config.rcb
        assert len(completions) >= length // tb.config.rcb
    assert tel["rd_requests"] == len(requests)
    assert 1 <= tel["rd_outstanding_max"] <= proto.READ_TAGS
    assert tel["rd_latency_count"] == len(requests)
    assert tel["rd_latency_min"] <= tel["rd_latency_max"]
    # A root latency shows in the device's own request-to-completion measurement.
    latency_cycles = tb.config.latency_ns * proto.CLOCK_HZ / 1e9
    assert latency_cycles <= tel["rd_latency_min"] <= latency_cycles + 2000, tel
    report(dut, **{**params, "test": "dma_read_data", "seconds": seconds, "bytes": length,
                   "telemetry": tel})


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def dma_loopback_data(dut):
    """Loopback: what the reader fetches, the writer stores, byte for byte."""
    params = case()
    tb, regs = await started(dut, params)
    length, chunk = params.get("length", 16384), params.get("chunk", 4096)
    data = PatternStream(Pattern[params.get("pattern", "PRBS31")]).take(length)
    src, dst = tb.alloc(length), tb.alloc(length)
    src.write(0, data)
    for engine in ("writer", "reader"):
        await regs.reset(engine)
    await regs.set_loopback(True)
    for offset in range(0, length, chunk):
        await regs.queue("writer", dst.address + offset, chunk)
        await regs.queue("reader", src.address + offset, chunk)
    await regs.enable("writer")
    await regs.enable("reader")
    await regs.wait_host_written(length, timeout_s=200e-6)
    assert dst.read() == data
    await regs.set_loopback(False)


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def msi_when_a_descriptor_completes(dut):
    """A descriptor queued with an IRQ raises its MSI vector bit and sends one MSI message."""
    tb, regs = await started(dut, case())
    buf = tb.alloc(8192)
    await regs.reset("writer")
    await tb.write32(proto.csr("pcie_msi_enable"), 1 << proto.MSI_WRITER | 1 << proto.MSI_READER)
    await regs.queue("writer", buf.address, 4096)
    await regs.queue("writer", buf.address + 4096, 4096, irq=True)
    await regs.enable("writer")
    await regs.wait_host_written(8192 + 4, timeout_s=100e-6)  # data + the 4-byte MSI message
    await tb.wait_cycles(50)
    assert sum(tb.msi_count) == 1, tb.msi_count
    vector = await tb.read32(proto.csr("pcie_msi_vector"))
    assert vector == 1 << proto.MSI_WRITER, hex(vector)
    await tb.write32(proto.csr("pcie_msi_clear"), vector)
    assert await tb.read32(proto.csr("pcie_msi_vector")) == 0
    await regs.enable("writer", False)


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def checker_counts_one_corrupted_word_once(dut):
    """One corrupted 32-bit word in the host buffer: 1 error, at that word's first bad byte."""
    params = case()
    tb, regs = await started(dut, params)
    pattern = Pattern[params.get("pattern", "PRBS31")]
    length, bad_offset = 8192, 4 * 1234 + 2
    data = bytearray(PatternStream(pattern).take(length))
    data[bad_offset] ^= 0x5A
    data[bad_offset + 1] ^= 0x01
    await regs.set_pattern(pattern)
    tel, _ = await dma_read(tb, regs, bytes(data), 4096)
    assert tel["pattern_errors"] == 1, tel
    assert tel["first_error_offset"] == bad_offset
    # Restarting the pattern clears the checker.
    await regs.set_pattern(pattern)
    assert await tb.read32(proto.csr("busprobe_pattern_errors")) == 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def dma_that_never_completes_times_out(dut):
    """A read from memory the host does not have gets UR completions: the wait reports a
    timeout instead of hanging, the device counts each UR and flags the read as failed, still
    answers BAR0, and reads clean after a read-path reset."""
    tb, regs = await started(dut, case())
    await regs.reset("reader")
    await regs.queue("reader", 0x7F00_0000, 4096)  # outside every allocated host region
    await regs.enable("reader")
    try:
        await regs.wait_counter("checked_bytes", 4096, timeout_s=20e-6)
    except TransferTimeout as exc:
        assert "did not complete" in str(exc)
    else:
        raise AssertionError("a DMA with no host memory behind it completed")
    await regs.enable("reader", False)
    assert await tb.read32(proto.csr("busprobe_magic")) == proto.MAGIC
    assert await tb.read32(proto.csr("busprobe_rd_status")) == proto.RD_FAILED
    # Every read the core sent (4096 / MRRS, at most its tags) was answered UR by the root.
    assert await regs.link_errors() == {"rd_cpl_status": 4096 // tb.config.mrrs}
    await regs.read_reset()
    await regs.set_pattern(Pattern.COUNTER)
    tel, _ = await dma_read(tb, regs, PatternStream(Pattern.COUNTER).take(4096), 4096)
    assert tel["checked_bytes"] == 4096 and tel["pattern_errors"] == 0 and tel["rd_status"] == 0


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def throughput(dut):
    """Measure one direction's throughput (used by the bench and the ceiling checks)."""
    params = case()
    tb, regs = await started(dut, params)
    direction, length = params.get("direction", "write"), params.get("length", 262144)
    chunk = params.get("chunk", 65536)
    wall = time.perf_counter()
    tb.upstream.__init__()
    tb.downstream.__init__()
    if direction == "write":
        data, seconds = await dma_write(tb, regs, Pattern.PRBS31, length, chunk)
        errors = PatternStream(Pattern.PRBS31).check(data).errors
        tel = await regs.telemetry()
        dev_cycles = (tel["wr_last_cycle"] - tel["wr_first_cycle"]) & 0xFFFF_FFFF
    else:
        await regs.set_pattern(Pattern.PRBS31)
        tel, seconds = await dma_read(tb, regs, PatternStream(Pattern.PRBS31).take(length), chunk)
        errors = tel["pattern_errors"]
        dev_cycles = (tel["rd_last_cycle"] - tel["rd_first_cycle"]) & 0xFFFF_FFFF
    wall = time.perf_counter() - wall
    report(dut, **{**params, "test": "throughput", "direction": direction, "bytes": length,
                   "seconds": seconds, "throughput": length / seconds,
                   "device_throughput": length * proto.CLOCK_HZ / dev_cycles, "errors": errors,
                   "telemetry": tel, "wall_s": wall,
                   "link": {"upstream": tb.upstream.to_json(),
                            "downstream": tb.downstream.to_json()},
                   "sim_cycles_per_s": seconds * proto.CLOCK_HZ / wall})
    assert errors == 0
