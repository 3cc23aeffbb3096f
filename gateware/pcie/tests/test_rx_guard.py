"""The receive guard alone (Migen simulation): what it passes, what it drops and how it counts.

Each case sends memory-read requests on the observed transmit stream, then TLP beats on the
receive stream, and compares the packets that come out and the event strobes with what the
guard's docstring promises. The Verilator bench repeats these against the whole core
(``sim/pcie/tests/test_pcie_faults.py``).
"""

from __future__ import annotations

import pytest
from busprobe.gateware.pcie.rx_guard import EVENTS, MAX_TLP_BEATS, RxTlpGuard
from busprobe.sim.pcie.tlp_stream import tlp_to_beats
from cocotbext.pcie.core.tlp import CplStatus, Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId
from litepcie.common import phy_layout
from litex.soc.interconnect import stream
from migen.sim import passive, run_simulation

ME = PcieId(1, 0, 0)  # requester ID of the device
ADDRESS = 0x1000_0200


def read_request(tag: int, nbytes: int, address: int = ADDRESS) -> list[tuple[int, int]]:
    tlp = Tlp()
    tlp.fmt_type = TlpType.MEM_READ
    tlp.requester_id = ME
    tlp.tag = tag
    tlp.set_addr_be(address, nbytes)
    return tlp_to_beats(tlp)


def completion(tag: int, data: bytes, byte_count: int, lower: int, **fields) -> Tlp:
    tlp = Tlp()
    tlp.fmt_type = TlpType.CPL_DATA if data else TlpType.CPL
    tlp.requester_id = ME
    tlp.completer_id = PcieId(0, 0, 0)
    tlp.tag = tag
    tlp.byte_count = byte_count & 0xFFF
    tlp.lower_address = lower & 0x7F
    if data:
        tlp.set_data(data)
    for name, value in fields.items():
        setattr(tlp, name, value)
    return tlp


def beats(tlp: Tlp) -> list[tuple[int, int]]:
    return tlp_to_beats(tlp)


def memory_write(value: int = 0x1234_5678, **fields) -> list[tuple[int, int]]:
    tlp = Tlp()
    tlp.fmt_type = TlpType.MEM_WRITE
    tlp.requester_id = PcieId(0, 0, 0)
    tlp.address = 0x100
    tlp.first_be = 0xF
    tlp.set_data(value.to_bytes(4, "big"))
    for name, value in fields.items():
        setattr(tlp, name, value)
    return tlp_to_beats(tlp)


def run(requests, received, *, timeout_cycles=0, idle=40, mps=512, flush_at=None,
        hold_output_until=0):
    # flush_at: cycles after the last received beat to pulse flush;
    # hold_output_until: the depacketizer is not ready before that cycle.
    """Drive the guard; returns (packets passed on, event counts, failed at the end)."""
    tx = stream.Endpoint(phy_layout(64))
    dut = RxTlpGuard(tx)
    out: list[list[tuple[int, int]]] = []
    events = dict.fromkeys(EVENTS, 0)
    state = {"failed": None}

    def send(endpoint, packets, start=0, flush_at=None):
        for _ in range(start):
            yield
        for packet in packets:
            for i, (dat, be) in enumerate(packet):
                yield endpoint.valid.eq(1)
                yield endpoint.dat.eq(dat)
                yield endpoint.be.eq(be)
                yield endpoint.last.eq(i == len(packet) - 1)
                yield
                while not (yield endpoint.ready):
                    yield
        yield endpoint.valid.eq(0)
        for cycle in range(idle):
            if flush_at is not None and cycle == flush_at:
                yield dut.flush.eq(1)
                yield
                yield dut.flush.eq(0)
            yield
        state["failed"] = (yield dut.failed)

    def transmit():
        yield tx.ready.eq(1)
        yield from send(tx, requests)

    def receive():
        yield from send(dut.sink, received, start=3 * len(requests) + 4, flush_at=flush_at)

    @passive
    def collect():
        packet: list[tuple[int, int]] = []
        cycle = 0
        while True:
            yield dut.source.ready.eq(cycle >= hold_output_until)
            yield
            cycle += 1
            if (yield dut.source.valid) and (yield dut.source.ready):
                packet.append(((yield dut.source.dat), (yield dut.source.be)))
                if (yield dut.source.last):
                    out.append(packet)
                    packet = []

    @passive
    def count():
        while True:
            yield
            for name in EVENTS:
                events[name] += (yield getattr(dut, name))

    def setup():
        yield dut.requester_id.eq(int(ME))
        yield dut.max_payload_size.eq(mps)
        yield dut.timeout_cycles.eq(timeout_cycles)
        yield

    run_simulation(dut, [setup(), transmit(), receive(), collect(), count()])
    return out, {k: v for k, v in events.items() if v}, state["failed"]


DATA = bytes(range(256)) * 2


def test_completions_split_at_the_rcb_pass_unchanged_and_retire_the_read():
    first = completion(0, DATA[:64], 128, ADDRESS)
    second = completion(0, DATA[64:128], 64, ADDRESS + 64)
    out, events, failed = run([read_request(0, 128)], [beats(first), beats(second)])
    assert out == [beats(first), beats(second)] and events == {} and not failed
    # The read is over: a third completion of that tag is unexpected.
    out, events, _ = run([read_request(0, 128)], [beats(first), beats(second), beats(first)])
    assert len(out) == 2 and events == {"unexpected": 1}


@pytest.mark.parametrize(("fault", "fields", "event"), [
    ("poisoned", {"ep": True}, "poisoned"),
    ("unsupported request", {"status": CplStatus.UR}, "status"),
    ("completer abort", {"status": CplStatus.CA}, "status"),
    ("byte count", {"byte_count": 132}, "mismatch"),
    ("lower address", {"lower_address": (ADDRESS + 8) & 0x7F}, "mismatch"),
])
def test_a_faulty_completion_is_dropped_fails_its_read_and_the_rest_is_discarded(fault, fields,
                                                                                   event):
    bad = completion(2, DATA[:64], 128, ADDRESS)
    for name, value in fields.items():
        setattr(bad, name, value)
    rest = completion(2, DATA[64:128], 64, ADDRESS + 64)
    out, events, failed = run([read_request(2, 128)], [beats(bad), beats(rest)])
    assert out == [] and events == {event: 1, "discarded": 1} and failed, fault


def test_status_completion_without_data_fails_the_read():
    ur = completion(1, b"", 128, ADDRESS, status=CplStatus.UR)
    out, events, failed = run([read_request(1, 128)], [beats(ur)])
    assert out == [] and events == {"status": 1} and failed


@pytest.mark.parametrize(("fault", "tlp"), [
    ("tag the core never uses", completion(9, DATA[:128], 128, ADDRESS)),
    ("tag not in flight", completion(5, DATA[:128], 128, ADDRESS)),
    ("another requester", completion(3, DATA[:128], 128, ADDRESS,
                                     requester_id=PcieId(2, 0, 0))),
    ("locked completion", completion(3, DATA[:128], 128, ADDRESS,
                                     fmt_type=TlpType.CPL_LOCKED_DATA)),
])
def test_unexpected_completions_are_dropped_and_the_read_goes_on(fault, tlp):
    good = completion(3, DATA[:128], 128, ADDRESS)
    out, events, failed = run([read_request(3, 128)], [beats(tlp), beats(good)])
    assert out == [beats(good)] and events == {"unexpected": 1} and not failed, fault


@pytest.mark.parametrize(("fault", "length", "event"), [
    ("payload longer than the read", 192, "mismatch"),
    ("partial completion off the RCB", 96, "mismatch"),
])
def test_completion_lengths_are_checked_against_the_read(fault, length, event):
    bad = completion(0, DATA[:length], 256, ADDRESS)
    out, events, failed = run([read_request(0, 128)], [beats(bad)])
    assert out == [] and events == {event: 1} and failed, fault


def test_cpl_without_data_with_success_status_is_a_mismatch():
    out, events, failed = run([read_request(0, 64)], [beats(completion(0, b"", 64, ADDRESS))])
    assert out == [] and events == {"mismatch": 1} and failed


def _truncated(packet, dws):
    """``packet`` less its last ``dws`` DWs, the byte enables saying so."""
    words = []
    for dat, be in packet:
        words += [dat & 0xFFFF_FFFF] + ([dat >> 32] if be & 0xF0 else [])
    words = words[:len(words) - dws] if dws > 0 else words + [0xDEAD_BEEF] * -dws
    return [(sum(w << (32 * k) for k, w in enumerate(words[i:i + 2])),
             0xFF if len(words[i:i + 2]) == 2 else 0x0F) for i in range(0, len(words), 2)]


@pytest.mark.parametrize(("fault", "dws"), [("one DW short", 1), ("a beat short", 2),
                                            ("one DW long", -1), ("a beat long", -2)])
def test_a_completion_whose_beats_do_not_match_its_length_is_malformed(fault, dws):
    bad = _truncated(beats(completion(4, DATA[:128], 128, ADDRESS)), dws)
    out, events, failed = run([read_request(4, 128)], [bad])
    assert out == [] and events == {"malformed": 1} and failed, fault


def test_fragments_and_prefixes_are_malformed_and_harm_no_read():
    # The first beat of a completion's header alone (DW0, DW1 with last).
    fragment = [[(beats(completion(6, DATA[:64], 64, ADDRESS))[0][0], 0xFF)]]
    prefixed = [(dat | (0b100 << 29), be) if i == 0 else (dat, be)
                for i, (dat, be) in enumerate(memory_write())]
    odd_be = [(dat, 0x3F if i == len(p) - 1 else be)
              for p in [memory_write()] for i, (dat, be) in enumerate(p)]
    good = completion(6, DATA[:64], 64, ADDRESS)
    out, events, failed = run([read_request(6, 64)], [*fragment, prefixed, odd_be, beats(good)])
    assert out == [beats(good)] and events == {"malformed": 3} and not failed


def test_a_payload_above_max_payload_size_is_malformed():
    big = completion(0, DATA[:256], 256, ADDRESS)
    out, events, failed = run([read_request(0, 256)], [beats(big)], mps=128)
    assert out == [] and events == {"malformed": 1} and failed


def test_an_endless_packet_is_cut_and_the_next_one_is_fine():
    endless = [(0x4A00_0040, 0xFF)] + [(0, 0xFF)] * (MAX_TLP_BEATS + 20)
    good = completion(0, DATA[:64], 64, ADDRESS)
    out, events, _ = run([read_request(0, 64)], [endless, beats(good)], idle=120)
    assert out == [beats(good)] and events == {"malformed": 1}


def test_requests_pass_and_poisoned_requests_are_dropped():
    out, events, failed = run([], [memory_write(1), memory_write(2, ep=True), memory_write(3)])
    assert out == [memory_write(1), memory_write(3)] and events == {"poisoned": 1}
    assert not failed


def test_a_read_never_answered_times_out_once_within_a_quarter_more():
    out, events, failed = run([read_request(7, 64), read_request(1, 64)],
                              [beats(completion(1, DATA[:64], 64, ADDRESS))],
                              timeout_cycles=64, idle=100)
    assert events == {"timeout": 1} and failed and len(out) == 1


def test_no_timeout_when_disabled_or_answered_in_time():
    good = completion(7, DATA[:64], 64, ADDRESS)
    _, events, failed = run([read_request(7, 64)], [beats(good)], timeout_cycles=200, idle=300)
    assert events == {} and not failed
    _, events, failed = run([read_request(7, 64)], [], timeout_cycles=0, idle=300)
    assert events == {} and not failed


def test_flush_clears_the_failure_and_drops_completions_not_yet_passed_on():
    good = completion(0, DATA[:64], 64, ADDRESS)
    poisoned = completion(1, DATA[:64], 64, ADDRESS, ep=True)
    out, events, failed = run([read_request(0, 64), read_request(1, 64)],
                              [beats(good), beats(poisoned), memory_write(9)],
                              flush_at=2, hold_output_until=60, idle=80)
    # The good completion waited behind a stalled depacketizer: after the flush it belongs to
    # an abandoned read. Requests still go through.
    assert out == [memory_write(9)] and events == {"poisoned": 1} and not failed
