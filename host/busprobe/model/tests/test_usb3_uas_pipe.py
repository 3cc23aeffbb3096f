"""UAS with bulk streams behind a host that primes each stream pipe once with the Prime Stream
ID (``sim:usb3?primes=pipe``, ``bus.extra["primes"]``): the same stepped schedule and bound as
named primes (:mod:`busprobe.model.usb3_uas`), without a prime per command. (That the bound
holds every stepped schedule either way: ``test_usb3_uas.py``.)"""

import pytest
from busprobe.model import ceiling_for
from busprobe.model.usb3 import DPH_BYTES, DPP_OVERHEAD, usb3_link
from busprobe.model.usb3_hosts import builtin_usb3_profiles, load_usb3_profile
from busprobe.model.usb3_uas import dp_seconds, uas_run
from busprobe.model.usb3_uas_bound import lane_bytes, uas_bound
from busprobe.model.usb3_uas_device import BUSPROBE_DEVICE, CYCLE, UasDevice
from busprobe.protocol.streams import NAMED_PRIMES, PIPE_PRIMES
from busprobe.transport import BusDescription


def _bus(host: str, primes: str = PIPE_PRIMES) -> BusDescription:
    return BusDescription(kind="usb3-ss", speed="super", host_profile=host,
                          max_packet_size=1024, protocol="uas", extra={"primes": primes})


def test_a_pipe_primed_command_puts_no_prime_and_no_nrdy_on_its_datas_lane():
    """Named primes cost a write its first data packet again and the status prime's TP, a read
    the NRDYs answering both primes; with the pipe primed once, none of them."""
    wire = DPH_BYTES + DPP_OVERHEAD  # a data packet's header and framing
    assert (lane_bytes("out", 4096, 1024) - lane_bytes("out", 4096, 1024, pipe_primes=True)
            == 1024 + wire + 20 + 2 * 16)
    assert (lane_bytes("in", 4096, 1024) - lane_bytes("in", 4096, 1024, pipe_primes=True)
            == 2 * 20 + 2 * 16)
    # busprobe's engine: the idle cycle after each of the host's two TPs on the downstream
    # lane (Start Stream and the ACK of the SENSE IU), none of its own upstream.
    assert (lane_bytes("out", 4096, 1024, BUSPROBE_DEVICE, pipe_primes=True)
            == lane_bytes("out", 4096, 1024, pipe_primes=True) + 2 * 4)
    assert (lane_bytes("in", 4096, 1024, BUSPROBE_DEVICE, pipe_primes=True)
            == lane_bytes("in", 4096, 1024, pipe_primes=True))


def test_only_the_runs_first_turn_primes_each_pipe():
    """The first command's turns prime each pipe (a write's with a zero-length data packet, not
    its first data packet); every later command's stream is selected without one."""
    profile = load_usb3_profile("vl805")
    link = usb3_link(_bus("vl805"), "out", profile)
    piped = uas_run(link, profile, 4096, commands=8, queue_depth=1, pipe_primes=True)
    named = uas_run(link, profile, 4096, commands=8, queue_depth=1)
    first, later = (named.stages[k]["data stream"] - piped.stages[k]["data stream"]
                    for k in (0, 4))
    # (and the host's LGOOD for the status prime's NRDY, ahead of the IU)
    assert first == pytest.approx(dp_seconds(1024) - dp_seconds(0) + 2 * CYCLE)
    assert later > first  # and no prime, its NRDY or the host's link commands for it


def test_no_device_however_slow_steps_above_the_pipe_primed_bound():
    profile = load_usb3_profile("small-burst")
    for direction in ("in", "out"):
        link = usb3_link(_bus("small-burst"), direction, profile)
        bound = uas_bound(link, profile, 1024, queue_depth=8, commands=96,
                          pipe_primes=True).seconds
        for decode in (0, 20, 100, 300, 800):
            device = UasDevice("slower", decode=decode, bytes_per_cycle=4)
            run = uas_run(link, profile, 1024, commands=96, queue_depth=8, device=device,
                          pipe_primes=True)
            assert bound < run.end, (direction, decode)


@pytest.mark.parametrize("host", ["vl805", "small-burst", "ideal"])
def test_pipe_primes_lift_queued_writes_and_leave_reads_at_least_as_fast(host):
    """A queued write's stream no longer waits for its first data packet twice: behind vl805
    4 KiB writes at queue depth 8 go from 110.5 to 117.1 MB/s, the streamed ceiling (the data
    pipe: one transfer per re-token delay, now without the prime's 2.1 µs)."""
    for length in (1024, 4096):
        named, piped = (ceiling_for(_bus(host, primes), "out", length=length, queue_depth=8)
                        for primes in (NAMED_PRIMES, PIPE_PRIMES))
        assert piped.throughput > named.throughput * 1.03, (length, named.throughput)
        reads = (ceiling_for(_bus(host, primes), "in", length=length, queue_depth=8)
                 for primes in (NAMED_PRIMES, PIPE_PRIMES))
        assert next(reads).throughput <= next(reads).throughput * (1 + 1e-9)
    vl805 = ceiling_for(_bus("vl805"), "out", length=4096, queue_depth=8)
    assert vl805.throughput == pytest.approx(117.1e6, rel=0.002)
    assert "each pipe primed once with the Prime Stream ID (a zero-length data packet)" in \
        vl805.formula


def test_busprobes_engine_decodes_a_write_a_cycle_sooner_with_the_pipe_primed():
    """The link trace: 26 cycles from the IU's ACK to the ERDY with the pipe primed, 27 with
    named primes (from the ACK's last symbol); the model ends a packet the cycle after it."""
    assert BUSPROBE_DEVICE.decode_for(reading=False, pipe_primes=True) == 25
    assert BUSPROBE_DEVICE.decode_for(reading=False, pipe_primes=False) == 27
    assert BUSPROBE_DEVICE.decode_for(reading=True, pipe_primes=True) == 27
    profile = load_usb3_profile("ideal")
    link = usb3_link(_bus("ideal"), "out", profile)
    alone = uas_run(link, profile, 1024, commands=1, queue_depth=1, device=BUSPROBE_DEVICE,
                    pipe_primes=True, primed=True).stages[0]
    ideal = uas_run(link, profile, 1024, commands=1, queue_depth=1, pipe_primes=True,
                    primed=True).stages[0]
    assert alone["data stream"] - ideal["data stream"] == pytest.approx(
        (25 + BUSPROBE_DEVICE.answer_out) * CYCLE)


@pytest.mark.parametrize("primes", [NAMED_PRIMES, PIPE_PRIMES])
@pytest.mark.parametrize("direction", ["in", "out"])
@pytest.mark.parametrize("host", builtin_usb3_profiles())
def test_the_bound_with_busprobes_engine_never_reads_above_the_ideal_devices(host, direction,
                                                                             primes):
    """A slower device can only lower the bound: for every shipped host, length and queue depth,
    in steady state and for runs of a few commands to a thousand. (With the host's idle cycle
    after its TP subtracted from the upstream lane's end, the engine's bound of 1 KiB reads ×
    QD 4 behind ``ideal`` read 0.01 MB/s above the ideal device's.)"""
    bus = _bus(host, primes)
    for length in (1024, 4096, 262144):
        for queue_depth in (1, 4, 8):
            for transfers in (None, 16, 189, 1024):
                ceiling = ceiling_for(bus, direction, length=length, queue_depth=queue_depth,
                                      transfers=transfers)
                assert ceiling.parts["busprobe_device"] <= ceiling.throughput * (1 + 1e-9), (
                    length, queue_depth, transfers)
