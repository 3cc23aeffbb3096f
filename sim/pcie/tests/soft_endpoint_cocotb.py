"""cocotb tests: cocotbext-pcie's root complex enumerates busprobe's soft endpoint, symbol by
symbol (model: :mod:`busprobe.sim.pcie.symbol.endpoint_model`; bench:
:mod:`busprobe.sim.pcie.symbol.cocotb_bench`).

Each test resets the model, trains the link and initialises flow control from scratch, so the
order of the tests does not matter. Figures go to ``$BUSPROBE_SOFT_ENDPOINT_FIGURES`` (JSON
lines).
"""

from __future__ import annotations

import json
import os
import time

import cocotb
from busprobe.protocol import pcie
from busprobe.protocol import pcie_config as cfg
from busprobe.protocol.pci_config import encode_size
from busprobe.protocol.pcie_ltssm import LinkSpeed, LtssmState, unpack_link_status
from busprobe.sim.pcie.symbol.cocotb_bench import SoftEndpointBench
from cocotb.triggers import ClockCycles
from cocotbext.pcie.core.caps.common import PciCapId
from cocotbext.pcie.core.tlp import CplStatus, Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId

#: The endpoint behind the root complex's first root port: bus 1, device 0.
ENDPOINT = PcieId(1, 0, 0)
#: The root complex's completion timeout: 50 µs, the low end of the spec's default range
#: (cocotbext-pcie's default is 1 µs, 250 symbol times: a request queued behind an ACK, an
#: UpdateFC and a SKP set would pass for an absent device).
TIMEOUT_US = 50
MPS, MRRS = 256, 512
#: Simulated time a test may take (each needs some 20 µs): a hang fails instead of running on.
TEST_TIMEOUT_US = 500


def record(name: str, bench: SoftEndpointBench, figures: dict, **more) -> None:
    """Append a test's figures: symbol times, requests, completions, wall time."""
    started = figures.pop("started")
    figures = {**figures, **more, "symbols": bench.cycles,
               "requests": bench.port.next_transmit_seq,
               "completions": bench.output("next_transmit_seq"),
               "wall_seconds": round(time.monotonic() - started, 2)}
    path = os.environ.get("BUSPROBE_SOFT_ENDPOINT_FIGURES")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({"test": name, **figures}) + "\n")


async def enumerated(dut) -> tuple[SoftEndpointBench, dict]:
    """Train, reach DL_Active, enumerate; the bench and figures on the way (``started``: the
    wall clock at the start, for :func:`record`)."""
    start = time.monotonic()
    bench = await SoftEndpointBench.start(dut, link=1, lane=0)
    dl_active = await bench.until_dl_active()
    status = unpack_link_status(bench.output("status"))
    assert status.state == LtssmState.L0 and status.width == 1, status
    assert status.speed == LinkSpeed.GEN1, status
    await bench.rc.enumerate(timeout=TIMEOUT_US, timeout_unit="us")
    figures = {"dl_active_symbols": dl_active, "enumerated_symbols": bench.cycles,
               "enumeration_requests": bench.port.next_transmit_seq, "started": start}
    return bench, figures


def assert_clean_link(bench: SoftEndpointBench) -> None:
    """No packet on the wire was bad either way, nothing NAKed, replayed or dropped."""
    port = bench.port
    assert all(packet.status == "good" for packet in port.received), \
        [p for p in port.received if p.status != "good"]
    assert port.bad_tlps == port.bad_dllps == 0
    for name in ("naks", "replays", "protocol_errors", "dropped", "malformed", "recoveries"):
        assert bench.output(name) == 0, (name, bench.output(name))
    assert port.partner.state == "l0"


@cocotb.test(timeout_time=TEST_TIMEOUT_US, timeout_unit="us")
async def root_complex_enumerates_the_soft_endpoint_sizes_bar0_enables_msi_sets_mps_mrrs(dut):
    bench, figures = await enumerated(dut)
    rc = bench.rc
    function = rc.find_device(ENDPOINT)
    assert function is not None, rc.host_bridge.to_str()
    assert (function.vendor_id, function.device_id) == (pcie.VENDOR_ID, pcie.DEVICE_ID)
    assert function.class_code == cfg.CLASS_CODE
    assert (function.subsystem_vendor_id, function.subsystem_id) == \
        (cfg.SUBSYSTEM_VENDOR_ID, cfg.SUBSYSTEM_ID)
    assert [cap for cap, _ in function.capabilities] == [PciCapId.PM, PciCapId.MSI,
                                                         PciCapId.EXP]
    # Bus and device captured from the first CfgWr0.
    assert bench.output("completer_id") == int(ENDPOINT)
    # BAR0: sized by the all-ones write, assigned in the root complex's memory window.
    assert function.bar_size[0] == pcie.BAR0_SIZE
    assert function.bar_size[1:] == [0] * 5 and function.expansion_rom_size == 0
    assert bench.output("bar0_base") == function.bar_addr[0] != 0

    await function.enable_device()
    await function.set_master()
    assert bench.output("memory_space") == bench.output("bus_master") == 1
    assert await function.alloc_irq_vectors(1, 1) == 1
    vector = function.msi_vectors[0]
    assert bench.output("msi_enable") == 1
    assert bench.output("msi_address") == vector.addr
    assert bench.output("msi_data") == vector.data & 0xFFFF

    await function.set_mps(encode_size(MPS))
    await function.set_readrq(encode_size(MRRS))
    assert (bench.output("max_payload_size"), bench.output("max_request_size")) == (MPS, MRRS)
    devctl = await function.capability_read_word(PciCapId.EXP, cfg.EXP_DEVCTL)
    assert devctl >> cfg.DEVCTL_MPS_SHIFT & 7 == encode_size(MPS)
    assert devctl >> cfg.DEVCTL_MRRS_SHIFT & 7 == encode_size(MRRS)
    link_status = await function.capability_read_word(PciCapId.EXP, cfg.EXP_LNKSTA)
    assert link_status & 0xF == LinkSpeed.GEN1 and link_status >> 4 & 0x3F == 1

    assert_clean_link(bench)
    updates = sum(1 for p in bench.port.received
                  if p.kind == "dllp" and p.payload[0] & 0xF0 in (0x80, 0x90))
    assert updates > 0  # more requests than the 4 NP header credits advertised: UpdateFC needed
    record("enumeration", bench, figures, updatefc=updates)


@cocotb.test(timeout_time=TEST_TIMEOUT_US, timeout_unit="us")
async def config_writes_of_all_ones_to_read_only_dwords_leave_them_unchanged(dut):
    bench, figures = await enumerated(dut)
    rc = bench.rc
    read_only = {offset: spec.reset for offset, spec in cfg.CONFIG_SPACE.items()
                 if not spec.writable and not spec.clear_on_write}
    assert len(read_only) >= 8
    for offset in read_only:
        await rc.config_write_dword(ENDPOINT, offset, 0xFFFF_FFFF, timeout=TIMEOUT_US,
                                    timeout_unit="us")
    after = {offset: await rc.config_read_dword(ENDPOINT, offset, timeout=TIMEOUT_US,
                                                timeout_unit="us")
             for offset in read_only}
    assert after == read_only
    assert_clean_link(bench)
    record("read_only", bench, figures, dwords=len(read_only))


@cocotb.test(timeout_time=TEST_TIMEOUT_US, timeout_unit="us")
async def config_requests_to_another_function_get_unsupported_request(dut):
    bench, figures = await enumerated(dut)
    rc = bench.rc
    statuses = []
    for function, kind, data in ((1, TlpType.CFG_READ_1, None), (2, TlpType.CFG_READ_1, None),
                                 (1, TlpType.CFG_WRITE_1, b"\xff\xff\xff\xff")):
        req = Tlp()
        req.fmt_type = kind
        req.requester_id = PcieId(0, 0, 0)
        req.completer_id = PcieId(ENDPOINT.bus, ENDPOINT.device, function)
        if data is None:
            req.set_addr_be(cfg.COMMAND, 4)
        else:
            req.set_addr_be_data(cfg.COMMAND, data)
        completions = await rc.perform_nonposted_operation(req, TIMEOUT_US, "us")
        assert len(completions) == 1, completions
        cpl = completions[0]
        assert cpl.fmt_type == TlpType.CPL and cpl.completer_id == ENDPOINT
        statuses.append(cpl.status)
    assert statuses == [CplStatus.UR] * 3
    # Function 0 unchanged by the write to function 1; its Unsupported Request Detected set.
    command = await rc.config_read_word(ENDPOINT, cfg.COMMAND, timeout=TIMEOUT_US,
                                        timeout_unit="us")
    assert command == 0  # enumeration left Memory Space and Bus Master off
    devsta = await rc.config_read_word(ENDPOINT, cfg.EXP_OFFSET + cfg.EXP_DEVSTA,
                                       timeout=TIMEOUT_US, timeout_unit="us")
    assert devsta & cfg.DEVSTA_UR_DETECTED
    assert_clean_link(bench)
    record("unsupported_request", bench, figures)


@cocotb.test(timeout_time=TEST_TIMEOUT_US, timeout_unit="us")
async def a_completion_with_a_bad_lcrc_is_naked_by_the_root_port_and_replayed(dut):
    bench, figures = await enumerated(dut)
    replays, timeouts = bench.output("replays"), bench.output("replay_timeouts")
    bench.corrupt_tlps = 1
    ids = await bench.rc.config_read_dword(ENDPOINT, 0, timeout=TIMEOUT_US, timeout_unit="us")
    assert ids == pcie.VENDOR_ID | pcie.DEVICE_ID << 16
    assert bench.corrupt_tlps == 0 and bench.port.bad_tlps == 1
    assert [p.status for p in bench.port.received if p.status != "good"] == ["bad_crc"]
    # Replayed on the root port's NAK, not after the endpoint's REPLAY_TIMER.
    assert bench.output("replays") == replays + 1
    assert bench.output("replay_timeouts") == timeouts
    assert bench.output("naks") == 0 and bench.output("protocol_errors") == 0
    record("bad_lcrc", bench, figures)


@cocotb.test(timeout_time=TEST_TIMEOUT_US, timeout_unit="us")
async def bar0_writes_reach_the_application_and_other_reads_get_unsupported_request(dut):
    bench, figures = await enumerated(dut)
    rc = bench.rc
    function = rc.find_device(ENDPOINT)
    await function.enable_device()
    bar0 = function.bar_addr[0]
    writes = {bar0 + 0x10: bytes(range(4)), bar0 + 0x100: bytes(range(64))}
    for address, data in writes.items():
        await rc.mem_write(address, data)
    for _ in range(2_000):
        if len(bench.app_tlps) == len(writes):
            break
        await ClockCycles(dut.clk, 1)
    routed = [Tlp.unpack(body) for body in bench.app_tlps]
    assert [(tlp.fmt_type, tlp.address, tlp.get_data()) for tlp in routed] == \
        [(TlpType.MEM_WRITE, address, data) for address, data in writes.items()]

    # A memory read outside BAR0 (sent as the root port would forward a stray one): UR, matched
    # to the request by the tag the root complex gave it.
    req = Tlp()
    req.fmt_type = TlpType.MEM_READ
    req.requester_id = PcieId(0, 0, 0)
    req.set_addr_be(bar0 + pcie.BAR0_SIZE, 4)
    completions = await rc.perform_nonposted_operation(req, TIMEOUT_US, "us")
    assert [(c.fmt_type, c.status, c.completer_id) for c in completions] == \
        [(TlpType.CPL, CplStatus.UR, ENDPOINT)]
    assert bench.output("unsupported_requests") == 1
    assert len(bench.app_tlps) == len(writes)
    assert bench.output("overflows") == bench.output("unsupported_posted") == 0
    assert_clean_link(bench)
    record("bar0_writes", bench, figures)
