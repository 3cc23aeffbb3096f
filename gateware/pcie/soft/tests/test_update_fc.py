"""UpdateFC after DL_Active: the credits of each kept TLP given back, by type, in DLLPs equal to
the reference packing (Amaranth simulation). TLPs are built by cocotbext-pcie's ``Tlp``."""

import pytest
from amaranth.sim import Simulator
from busprobe.gateware.pcie.soft.fc_init import ADVERTISED
from busprobe.gateware.pcie.soft.update_fc import UpdateFc
from busprobe.gateware.pcie.soft.word_deframer import RX_TLP_BYTE, RX_TLP_DW
from busprobe.protocol.pcie_dll import DllpType, fc_dllp
from busprobe.sim.pcie.symbol import requests
from cocotbext.pcie.core.tlp import CplStatus, Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId

(P_HDR, P_DATA), (NP_HDR, NP_DATA), _ = ADVERTISED
#: Every behaviour below holds for TLPs received as bytes and as DWs.
UNITS = pytest.mark.parametrize("unit_bytes", [1, 4])


def config_read() -> bytes:
    return bytes(requests.config_read(0x10).pack())


def config_write() -> bytes:
    return bytes(requests.config_write(0x10, 0xFFFF_FFFF).pack())


def memory_write(nbytes: int) -> bytes:
    return bytes(requests.memory_write(0x1000, bytes(nbytes)).pack())


def completion() -> bytes:
    tlp = Tlp()
    tlp.fmt_type = TlpType.CPL_DATA
    tlp.completer_id, tlp.requester_id, tlp.status = PcieId(0, 0, 0), PcieId(1, 0, 0), \
        CplStatus.SC
    tlp.set_data(bytes(4))
    tlp.byte_count = 4
    return bytes(tlp.pack())


def run(tlps, *, accepted=lambda i: True, interval=5000, tail=20, active_from=0,
        drop_at=None, held=lambda i: False, released_at=(), posted_released_at=(),
        unit_bytes=1, symbols_per_clock=1):
    """Feed ``tlps`` a unit (byte or DW) a clock with ``rx_accept`` after each (``np_held``
    with it as ``held(index)`` says; ``np_released`` strobed once at each cycle of ``released_at``,
    counted from the tail's start); return the DLLPs sent."""
    dut = UpdateFc(interval=interval, unit=RX_TLP_DW if unit_bytes == 4 else RX_TLP_BYTE,
                   symbols_per_clock=symbols_per_clock)
    sent: list[bytes] = []

    async def testbench(ctx):
        ctx.set(dut.tx_dllp.ready, 1)
        cycle = 0

        async def tick():
            nonlocal cycle
            ctx.set(dut.dl_active, cycle >= active_from and cycle != drop_at)
            if ctx.get(dut.tx_dllp.valid):
                sent.append(ctx.get(dut.tx_dllp.payload).to_bytes(4, "little"))
            await ctx.tick()
            cycle += 1

        for index, body in enumerate(tlps):
            for i in range(0, len(body), unit_bytes):
                ctx.set(dut.rx_tlp.valid, 1)
                ctx.set(dut.rx_tlp.payload, {
                    "data": int.from_bytes(body[i:i + unit_bytes], "little"), "first": i == 0})
                await tick()
            ctx.set(dut.rx_tlp.valid, 0)
            ctx.set(dut.rx_accept, accepted(index))
            ctx.set(dut.np_held, held(index))
            ctx.set(dut.p_held, held(index))
            await tick()
            ctx.set(dut.rx_accept, 0)
            ctx.set(dut.np_held, 0)
            ctx.set(dut.p_held, 0)
            for _ in range(3):
                await tick()
        for at in range(tail):
            ctx.set(dut.np_released, released_at.count(at))
            ctx.set(dut.p_released, at in posted_released_at)
            await tick()
        ctx.set(dut.np_released, 0)
        ctx.set(dut.p_released, 0)

    sim = Simulator(dut)
    sim.add_clock(4e-9)
    sim.add_testbench(testbench)
    sim.run()
    return sent


@UNITS
def test_each_kept_request_returns_its_credits_in_an_updatefc_of_its_type(unit_bytes):
    sent = run([config_read(), config_write(), memory_write(40), completion(), config_read()],
               unit_bytes=unit_bytes)
    assert sent == [
        fc_dllp(DllpType.UPDATE_FC_NP, NP_HDR + 1, NP_DATA),
        fc_dllp(DllpType.UPDATE_FC_NP, NP_HDR + 2, NP_DATA + 1),  # a write: 1 DW of data
        fc_dllp(DllpType.UPDATE_FC_P, P_HDR + 1, P_DATA + 3),  # 40 bytes: 3 credits of 16
        # the completion: infinite credits, nothing to return
        fc_dllp(DllpType.UPDATE_FC_NP, NP_HDR + 3, NP_DATA + 1),
    ]


@UNITS
def test_a_dropped_tlp_returns_nothing_and_the_timer_resends_both_types(unit_bytes):
    sent = run([config_read(), config_read()], accepted=lambda i: i == 1, interval=200,
               tail=200, unit_bytes=unit_bytes)
    np_update = fc_dllp(DllpType.UPDATE_FC_NP, NP_HDR + 1, NP_DATA)
    p_update = fc_dllp(DllpType.UPDATE_FC_P, P_HDR, P_DATA)
    assert sent[0] == np_update
    assert sent[1:] == [p_update, np_update]  # the 30 µs guideline, scaled: both again


@UNITS
def test_nothing_before_dl_active_and_counters_restart_after_dl_inactive(unit_bytes):
    big = memory_write(1024 * 4)  # 1024 DW: Length field 0, 256 data credits
    assert run([big], unit_bytes=unit_bytes) == [
        fc_dllp(DllpType.UPDATE_FC_P, P_HDR + 1, (P_DATA + 256) % 4096)]
    # DL_Inactive in the clock its UpdateFC was due: forgotten with the counts.
    sent = run([big, config_read()], drop_at=len(big) // unit_bytes + 1,
               unit_bytes=unit_bytes)
    assert sent == [fc_dllp(DllpType.UPDATE_FC_NP, NP_HDR + 1, NP_DATA)]
    assert not run([config_read()], active_from=10_000, unit_bytes=unit_bytes)


@UNITS
def test_a_held_request_returns_its_data_credit_at_once_and_its_header_when_released(unit_bytes):
    # Two config writes held until their completions leave, both at once (the two queues'
    # last bytes in one clock), then one alone.
    sent = run([config_write(), config_write(), config_read()], held=lambda i: True,
               released_at=(5, 5, 30), tail=60, unit_bytes=unit_bytes)
    assert sent == [
        fc_dllp(DllpType.UPDATE_FC_NP, NP_HDR, NP_DATA + 1),  # data consumed, header held
        fc_dllp(DllpType.UPDATE_FC_NP, NP_HDR, NP_DATA + 2),
        # a held read moves nothing: no UpdateFC
        fc_dllp(DllpType.UPDATE_FC_NP, NP_HDR + 2, NP_DATA + 2),  # two released together
        fc_dllp(DllpType.UPDATE_FC_NP, NP_HDR + 3, NP_DATA + 2),
    ]


@UNITS
def test_a_held_posted_write_returns_its_header_and_data_credits_when_released_in_order(unit_bytes):
    sent = run([memory_write(40), memory_write(100), config_read()],
               held=lambda i: i < 2, posted_released_at=(10, 40), tail=80,
               unit_bytes=unit_bytes)
    assert sent == [
        # the two writes held: nothing; the read returns its header at once
        fc_dllp(DllpType.UPDATE_FC_NP, NP_HDR + 1, NP_DATA),
        fc_dllp(DllpType.UPDATE_FC_P, P_HDR + 1, P_DATA + 3),  # the first: 40 bytes, 3 credits
        fc_dllp(DllpType.UPDATE_FC_P, P_HDR + 2, P_DATA + 3 + 7),  # then 100 bytes: 7
    ]


@pytest.mark.parametrize("symbols_per_clock", [1, 4])
def test_unprompted_updatefcs_come_every_interval_of_symbol_times(symbols_per_clock):
    # 1,010 clocks with nothing received: at one symbol a clock 5 intervals of 200 symbol
    # times, at two (the four-symbol link at Gen1) 10; both types each time.
    sent = run([], interval=200, tail=1010, symbols_per_clock=symbols_per_clock)
    assert len(sent) == 2 * 5 * symbols_per_clock
