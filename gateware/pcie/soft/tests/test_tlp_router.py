"""The transaction-layer router (Amaranth simulation): TLPs built and UR completions parsed by
cocotbext-pcie's ``Tlp``, fed as the data link layer gives them (a byte or a DW a clock, then
``rx_accept`` unless dropped)."""

from collections.abc import Callable

import pytest
from busprobe.gateware.pcie.soft.tlp_router import TlpRouter
from busprobe.gateware.pcie.soft.word_deframer import RX_TLP_BYTE, RX_TLP_DW
from busprobe.sim.pcie.symbol.amaranth_bench import receive_tlps, simulate
from cocotbext.pcie.core.tlp import CplStatus, Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId

ROOT = PcieId(0, 0, 0)
ENDPOINT = PcieId(1, 0, 0)
BAR0 = 0xF000_0000
COUNTERS = ("unsupported_requests", "unsupported_posted", "unexpected_completions", "overflows")
#: Every behaviour below holds for TLPs received and routed as bytes and as DWs.
UNITS = pytest.mark.parametrize("unit_bytes", [1, 4])


def memory(kind: TlpType, address: int, data: bytes | None = None, tag: int = 0) -> Tlp:
    tlp = Tlp()
    tlp.fmt_type = kind
    tlp.requester_id = ROOT
    tlp.tag = tag
    if data is None:
        tlp.set_addr_be(address, 4)
    else:
        tlp.set_addr_be_data(address, data)
    return tlp


def completion(requester: PcieId, data: bytes, tag: int = 3) -> Tlp:
    request = memory(TlpType.MEM_READ, 0x1000, tag=tag)
    request.requester_id = requester
    cpl = Tlp.create_completion_data_for_tlp(request, PcieId(0, 0, 0))
    cpl.set_data(data)
    cpl.byte_count = len(data)
    return cpl


#: The credit strobes, summed over a run (``run(..., with_credits=True)``).
CREDIT_STROBES = ("p_held", "p_released", "np_held", "np_released")


def body(tlp: Tlp | bytes) -> bytes:
    return tlp if isinstance(tlp, bytes) else bytes(tlp.pack())


def run(tlps: list[Tlp | bytes], *, accepted: Callable[[int], bool] = lambda index: True,
        memory_space: bool = True, ready: Callable[[int], bool] = lambda cycle: True,
        store_bytes: int = 2048, with_credits: bool = False, taken: list[int] | None = None,
        unit_bytes: int = 1) -> tuple[list[bytes], list[Tlp], dict]:
    """Routed TLPs (raw bytes), UR completions and the counters once all has come out (and,
    ``with_credits``, the credit strobes summed under ``credits``; ``taken`` gets the cycle
    of every routed unit taken)."""
    dut = TlpRouter(store_bytes=store_bytes, unit=RX_TLP_DW if unit_bytes == 4 else RX_TLP_BYTE)
    credits = dict.fromkeys(CREDIT_STROBES, 0)
    routed: list[bytes] = []
    urs: list[Tlp] = []
    counters: dict[str, int] = {}

    async def feed(ctx):
        ctx.set(dut.memory_space, memory_space)
        ctx.set(dut.bar0_base, BAR0)
        ctx.set(dut.completer_id, int(ENDPOINT))
        await receive_tlps(ctx, dut, [body(tlp) for tlp in tlps], accepted,
                           unit_bytes=unit_bytes)
        await ctx.tick().repeat(store_bytes + 40)
        counters.update({name: ctx.get(getattr(dut, name)) for name in COUNTERS})

    async def collect(ctx, port, out: list, parse, cycles: list[int] | None = None):
        current = bytearray()
        cycle = 0
        while True:
            ctx.set(port.ready, ready(cycle))
            _, _, valid, took, unit, last = await ctx.tick().sample(
                port.valid, port.ready, port.payload.data, port.payload.last)
            cycle += 1
            if current:
                assert valid, "a TLP paused between its first and last byte"
            if valid and took:
                if cycles is not None:
                    cycles.append(cycle)
                current.extend(unit.to_bytes(unit_bytes, "little"))
                if last:
                    out.append(parse(bytes(current)))
                    current = bytearray()

    async def collect_routed(ctx):
        await collect(ctx, dut.source, routed, bytes, taken)

    async def collect_urs(ctx):
        await collect(ctx, dut.ur_tlp, urs, Tlp.unpack)

    async def count_credits(ctx):
        async for _, _, *strobes in ctx.tick().sample(dut.p_held, dut.p_released,
                                                       dut.np_held, dut.np_released):
            for name, value in zip(CREDIT_STROBES, strobes, strict=True):
                credits[name] += value

    simulate(dut, feed, collect_routed, collect_urs, count_credits)
    return routed, urs, counters | ({"credits": credits} if with_credits else {})


@UNITS
def test_bar0_writes_reads_and_own_completions_come_out_whole_in_order(unit_bytes):
    tlps = [memory(TlpType.MEM_WRITE, BAR0 + 0x10, bytes(range(8))),
            memory(TlpType.MEM_READ, BAR0 + 0xFFFC, tag=5),
            completion(ENDPOINT, bytes(range(64))),
            memory(TlpType.MEM_WRITE_64, BAR0 + 0x20, b"\x01\x02\x03\x04")]
    routed, urs, counters = run(tlps, ready=lambda cycle: cycle % 3 != 0, unit_bytes=unit_bytes)
    assert routed == [bytes(tlp.pack()) for tlp in tlps]
    assert urs == [] and set(counters.values()) == {0}


@UNITS
def test_stored_tlps_leave_back_to_back_a_byte_a_clock_from_the_registered_store(unit_bytes):
    # The store's read is registered (block RAM); its address looks a byte ahead, so a TLP's
    # last byte and the next one's first leave on consecutive clocks.
    tlps = [memory(TlpType.MEM_WRITE, BAR0 + 4 * i, bytes(range(i, i + 4 * (i + 1))))
            for i in range(6)]
    cycles: list[int] = []
    routed, _, _ = run(tlps, ready=lambda cycle: cycle >= 300, taken=cycles, unit_bytes=unit_bytes)
    assert routed == [bytes(tlp.pack()) for tlp in tlps]
    assert cycles == list(range(cycles[0], cycles[0] + len(cycles)))


@UNITS
def test_a_tlp_the_data_link_layer_drops_never_reaches_the_application(unit_bytes):
    tlps = [memory(TlpType.MEM_WRITE, BAR0, bytes(range(16))),
            memory(TlpType.MEM_WRITE, BAR0 + 4, b"\xaa" * 4),
            memory(TlpType.MEM_READ, BAR0 + 8, tag=9)]
    routed, urs, _ = run(tlps, accepted=lambda index: index != 0, unit_bytes=unit_bytes)
    assert routed == [bytes(tlps[1].pack()), bytes(tlps[2].pack())]
    assert urs == []


@UNITS
def test_non_posted_requests_not_for_bar0_get_an_unsupported_request_completion(unit_bytes):
    outside = memory(TlpType.MEM_READ, 0x1234_0000, tag=1)
    above_4g = memory(TlpType.MEM_READ_64, 0x1_0000_0000 | BAR0, tag=2)
    io_read = memory(TlpType.IO_READ, 0x100, tag=3)
    locked = memory(TlpType.MEM_READ_LOCKED, BAR0, tag=4)
    routed, urs, counters = run([outside, above_4g, io_read, locked], unit_bytes=unit_bytes)
    assert routed == []
    assert [(c.fmt_type, c.status, c.tag, c.requester_id, c.completer_id) for c in urs] == [
        (TlpType.CPL, CplStatus.UR, tag, ROOT, ENDPOINT) for tag in (1, 2, 3, 4)]
    assert counters["unsupported_requests"] == 4


@UNITS
def test_bar0_reads_with_memory_space_off_are_unsupported(unit_bytes):
    routed, urs, counters = run([memory(TlpType.MEM_READ, BAR0, tag=7)], memory_space=False,
                                unit_bytes=unit_bytes)
    assert routed == [] and [c.tag for c in urs] == [7]


@UNITS
def test_posted_writes_elsewhere_messages_and_strangers_completions_are_dropped_and_counted(
        unit_bytes):
    # Msg, 4 DW, routed local (Fmt 001 Type 10100), Vendor_Defined Type 1 (code 0x7F):
    # cocotbext-pcie's Tlp cannot pack messages.
    message = bytes([0x34, 0, 0, 0, 0, 0, 0, 0x7F]) + bytes(8)
    tlps = [memory(TlpType.MEM_WRITE, BAR0 + 0x1_0000, b"\x00" * 4), message,
            completion(PcieId(2, 0, 0), b"\x00" * 4),
            memory(TlpType.CFG_READ_0, 0)]  # configuration space's: nothing here
    routed, urs, counters = run(tlps, unit_bytes=unit_bytes)
    assert routed == [] and urs == []
    assert counters == {"unsupported_requests": 0, "unsupported_posted": 2,
                        "unexpected_completions": 1, "overflows": 0}


@UNITS
def test_a_tlp_larger_than_the_store_left_is_dropped_and_counted_the_next_still_routed(unit_bytes):
    # A 2 KiB write (beyond any credits the endpoint advertises) into the 2 KiB store.
    tlps = [memory(TlpType.MEM_WRITE, BAR0, bytes(2048)),
            memory(TlpType.MEM_WRITE, BAR0, bytes(32))]
    routed, _, counters = run(tlps, unit_bytes=unit_bytes)
    assert routed == [bytes(tlps[1].pack())]
    assert counters["overflows"] == 1


@UNITS
def test_stored_requests_hold_their_credits_until_the_application_takes_them(unit_bytes):
    """Two BAR0 writes and a BAR0 read hold their credits while stored; a UR read holds its
    header until its Cpl has left; a completion and a write outside BAR0 hold nothing. With
    the application stalled nothing stored is released; once it reads, all is."""
    tlps = [memory(TlpType.MEM_WRITE, BAR0 + 0x10, bytes(8)),
            memory(TlpType.MEM_READ, BAR0 + 0x20, tag=1),
            memory(TlpType.MEM_READ, BAR0 - 0x1000, tag=2),  # UR
            completion(ENDPOINT, bytes(16)),
            memory(TlpType.MEM_WRITE, BAR0 - 0x1000, bytes(4)),  # dropped: not for BAR0
            memory(TlpType.MEM_WRITE_64, BAR0 + 0x30, bytes(4))]
    _, urs, counters = run(tlps, with_credits=True, unit_bytes=unit_bytes)
    assert len(urs) == 1
    assert counters["credits"] == {"p_held": 2, "p_released": 2, "np_held": 2,
                                   "np_released": 2}
    # Nothing taken (the UR Cpl's reader stalled too): held, never released.
    _, _, stalled = run(tlps, ready=lambda cycle: False, with_credits=True, unit_bytes=unit_bytes)
    assert stalled["credits"] == {"p_held": 2, "p_released": 0, "np_held": 2,
                                  "np_released": 0}


@UNITS
def test_an_unsupported_request_completion_keeps_the_requests_traffic_class_and_attributes(
        unit_bytes):
    # TC and Attr are the fields the Cpl's bytes are built narrower than a byte from: at DWs
    # a byte not widened to 8 bits would shift every byte after it.
    request = memory(TlpType.MEM_READ, 0x1234_0000, tag=0x5A)
    request.tc, request.attr = 5, 3
    _, urs, _ = run([request], unit_bytes=unit_bytes)
    assert [(c.tc, c.attr, c.tag, c.requester_id, c.completer_id, c.status) for c in urs] == [
        (5, 3, 0x5A, ROOT, ENDPOINT, CplStatus.UR)]
