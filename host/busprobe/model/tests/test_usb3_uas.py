"""UAS with bulk streams at SuperSpeed (:mod:`busprobe.model.usb3_uas` through ``ceiling_for``):
stepped command by command by the simulated xHCI's rules."""

from dataclasses import replace

import pytest
from busprobe.model import ceiling_for
from busprobe.model.usb3 import usb3_link
from busprobe.model.usb3_hosts import builtin_usb3_profiles, load_usb3_profile
from busprobe.model.usb3_uas import dp_seconds, uas_period, uas_run
from busprobe.model.usb3_uas_bound import lane_bytes, uas_bound
from busprobe.model.usb3_uas_device import BUSPROBE_DEVICE, IDEAL_DEVICE, UasDevice
from busprobe.protocol import uas
from busprobe.transport import BusDescription

PROFILES = builtin_usb3_profiles()
LENGTHS = (512, 4096, 65536, 262144, 2 << 20)
DEPTHS = (1, 2, 4, 8, 32)


def _bus(host: str, protocol: str = "uas", primes: str = "named") -> BusDescription:
    return BusDescription(kind="usb3-ss", speed="super", host_profile=host,
                          max_packet_size=1024, protocol=protocol, extra={"primes": primes})


def _uas(host: str, direction: str, length: int, depth: int, **kw) -> float:
    return ceiling_for(_bus(host), direction, length=length, queue_depth=depth, **kw).throughput


@pytest.mark.parametrize("host", PROFILES)
@pytest.mark.parametrize("direction", ["in", "out"])
def test_longer_commands_and_deeper_queues_never_read_less(host, direction):
    for depth in DEPTHS:
        figures = [_uas(host, direction, length, depth) for length in LENGTHS]
        assert figures == sorted(figures), (depth, figures)
    for length in LENGTHS:
        figures = [_uas(host, direction, length, depth) for depth in DEPTHS]
        # (equal within rounding once the queue no longer helps)
        assert all(b >= a * (1 - 1e-9) for a, b in zip(figures, figures[1:], strict=False)), \
            (length, figures)


@pytest.mark.parametrize("host", ["vl805", "small-burst"])
@pytest.mark.parametrize("direction", ["in", "out"])
@pytest.mark.parametrize("length", [4096, 262144])
def test_queued_uas_beats_bot_and_stays_below_the_streamed_link(host, direction, length):
    """Behind a host with a turnaround to hide (the ideal host has none: there UAS's OUT prime,
    a whole data packet per command, costs more than BOT's CBW and CSW)."""
    bot = ceiling_for(_bus(host, "bot"), direction, length=length, queue_depth=1).throughput
    link = ceiling_for(replace(_bus(host, "stream"), host_profile="ideal"), direction).throughput
    for depth in (2, 4, 8):
        uas = _uas(host, direction, length, depth)
        streamed = ceiling_for(_bus(host, "stream"), direction, length=length,
                               queue_depth=depth).throughput
        assert bot < uas <= streamed <= link, (depth, bot, uas, streamed)


def test_behind_vl805_a_command_pays_one_turnaround_at_qd_1_and_the_retoken_when_queued():
    profile = load_usb3_profile("vl805")
    one = ceiling_for(_bus("vl805"), "in", length=4096, queue_depth=1)
    turnaround = (profile.completion_latency_us + profile.resubmit_latency_us) * 1e-6
    # The COMMAND IU, the data stream's ERDY answered after the host's 2 µs: ~2.4 µs on top.
    assert 2e-6 < one.parts["period"] - one.parts["transfer_seconds"] - turnaround < 3e-6
    assert one.parts["bound_terms"]["driver"] == one.parts["period"]
    # Queued, the data pipe is the bottleneck: a transfer, its re-token delay and a prime per
    # command; within 0.2 % of the streamed figure.
    deep = ceiling_for(_bus("vl805"), "in", length=4096, queue_depth=8)
    streamed = ceiling_for(_bus("vl805", "stream"), "in", length=4096, queue_depth=8).throughput
    assert 0.998 * streamed < deep.throughput <= streamed
    assert "set by the data pipe" in deep.formula


def test_every_out_command_pays_its_prime_the_first_data_packet_sent_twice():
    """Queued writes on vl805: the data pipe sends each command's prime, 1024 B the device
    drops, besides its data."""
    uas = 4096 / _uas("vl805", "out", 4096, 8)
    streamed = 4096 / ceiling_for(_bus("vl805", "stream"), "out", length=4096,
                                  queue_depth=8).throughput
    assert uas - streamed == pytest.approx((1024 + 32) / 500e6)


@pytest.mark.parametrize(("direction", "ahead"), [("in", 3 * 20),
                                                  ("out", 2 * 20 + 1024 + 32 + 8)])
def test_a_commands_iu_goes_on_the_hosts_lane_behind_the_sense_ack_and_its_primes(direction,
                                                                                 ahead):
    """Behind the ideal host at QD 1, each command's IU waits on the host's one lane for the
    ACK of the SENSE IU before it and its own streams' primes (IN: two ACK TPs; OUT: an ACK TP
    and a whole data packet, then the host's LGOOD, 8 B, for the device's NRDY to the status
    prime, which came during that packet), the first command's for its primes only; every
    answer to the device's ERDY waits for the host's LGOOD and LCRD (16 B)."""
    profile = load_usb3_profile("ideal")
    link = usb3_link(_bus("ideal"), direction, profile)
    stages = uas_run(link, profile, 4096, commands=3, queue_depth=1).stages
    iu, lc = (32 + 32) / 500e6, 16 / 500e6
    assert stages[1]["command IU in"] == pytest.approx(lc + ahead / 500e6 + iu)
    assert stages[0]["command IU in"] == pytest.approx((ahead - 20) / 500e6 + iu)
    # The device's ACK of the IU 12 cycles after it, its ERDY at once (an ideal device), the
    # host's Start Stream after the ERDY's LGOOD and LCRD.
    ack, erdy = 12 / 125e6 + 20 / 500e6, 20 / 500e6
    assert stages[2]["data stream"] == pytest.approx(stages[2]["command IU in"] + ack + erdy
                                                     + lc)


@pytest.mark.parametrize("direction", ["in", "out"])
def test_busprobes_engine_costs_under_a_packet_at_qd_1_and_nothing_when_queued(direction):
    ceiling = ceiling_for(_bus("vl805"), direction, length=4096, queue_depth=1)
    lost = 4096 / ceiling.parts["busprobe_device"] - 4096 / ceiling.throughput
    # IN: the ERDY goes with the first beat, so the host's 2 µs answer hides most of the
    # 256-cycle fill of the first packet; OUT: the SENSE goes at the last ACK. At most the
    # decode and a few cycles are left: well under the 256 cycles of one packet.
    assert 0 <= lost < 64 / 125e6
    queued = ceiling_for(_bus("vl805"), direction, length=4096, queue_depth=8)
    assert queued.parts["busprobe_device"] == pytest.approx(queued.throughput, rel=1e-9)
    assert "with busprobe's UAS engine" in ceiling.formula


def test_a_device_that_fills_a_packet_before_its_erdy_loses_that_packet_at_qd_1():
    """The engine before its tagged ERDY announcement: the whole first packet's fill (256
    cycles) came on top of the host's answer."""
    profile = load_usb3_profile("vl805")
    link = usb3_link(_bus("vl805"), "in", profile)
    ours = uas_run(link, profile, 4096, commands=16, queue_depth=1, device=BUSPROBE_DEVICE).end
    late = UasDevice("late ERDY", decode=20 + 256, bytes_per_cycle=4)
    theirs = uas_run(link, profile, 4096, commands=16, queue_depth=1, device=late).end
    assert 15 * 200 / 125e6 < theirs - ours < 16 * 280 / 125e6


def test_a_finite_run_is_stepped_from_its_first_submission():
    steady = ceiling_for(_bus("vl805"), "in", length=4096, queue_depth=1)
    run = ceiling_for(_bus("vl805"), "in", length=4096, queue_depth=1, transfers=16)
    resubmit = load_usb3_profile("vl805").resubmit_latency_us * 1e-6
    # No resubmit before the first command: 16 periods less one.
    assert run.parts["run_seconds"] == pytest.approx(16 * steady.parts["period"] - resubmit,
                                                     rel=1e-3)
    assert run.throughput > steady.throughput and run.parts["device_ceiling"] is None
    assert run.model == "usb3-ss link UAS host profile vl805"
    assert "bound on a run of 16 commands, host clock from the first submission" in run.formula
    # A deeper queue sends its commands one re-token delay apart at the start.
    profile = load_usb3_profile("vl805")
    times = uas_run(usb3_link(_bus("vl805"), "in", profile), profile, 4096, commands=8,
                    queue_depth=8)
    ins = [stage["command IU in"] for stage in times.stages]
    assert all(b - a > profile.retoken_delay_us * 1e-6
               for a, b in zip(ins, ins[1:], strict=False))


@pytest.mark.parametrize("primes", ["named", "pipe"])
@pytest.mark.parametrize("host", PROFILES)
def test_the_bound_holds_the_stepped_schedules_and_busprobes_engine_never_beats_it(host, primes):
    """Either way the host primes (``test_usb3_uas_pipe.py``: the pipe once)."""
    for direction in ("in", "out"):
        for length in (512, 4096, 262144):
            for depth in (1, 2, 8):
                for transfers in (None, 16):
                    ceiling = ceiling_for(_bus(host, primes=primes), direction, length=length,
                                          queue_depth=depth, transfers=transfers)
                    assert ceiling.parts["primes"] == primes
                    for figure in ("stepped", "busprobe_device", "busprobe_stepped"):
                        assert ceiling.parts[figure] <= ceiling.throughput * (1 + 1e-9), (
                            direction, length, depth, transfers, figure)


def test_no_device_however_slow_or_phased_steps_above_the_bound():
    """Where a prime goes depends on whether a command came before or after its pipe's turn
    started, so a slower device may step to a better schedule (the simulation once read 2.3 %
    above the ideal device's stepped figure behind small-burst): the ceiling is the bound, and
    no stepped schedule of any device reaches past it."""
    profile = load_usb3_profile("small-burst")
    for direction in ("in", "out"):
        link = usb3_link(_bus("small-burst"), direction, profile)
        bound = uas_bound(link, profile, 1024, queue_depth=8, commands=96).seconds
        for decode in (0, 20, 100, 300, 800):
            for after_last in (0, 8, 264):
                device = UasDevice("slower", decode=decode, bytes_per_cycle=4,
                                   after_last=after_last)
                run = uas_run(link, profile, 1024, commands=96, queue_depth=8, device=device)
                assert bound < run.end, (direction, decode, after_last)


def test_between_two_streams_a_pipe_pays_its_handshake_two_turnarounds_on_reads_one_on_writes():
    """Behind small-burst (no re-token delay, 1 µs turnaround) queued reads are bound by the
    data pipe, and each stream waits for the host's ACK of the last one's last packet, the
    device's ERDY and the host's answer to it: the simulation read 365.3 MB/s at 4 KiB × QD 8
    where a bound without that handshake said 461.0."""
    profile = load_usb3_profile("small-burst")
    deep = ceiling_for(_bus("small-burst"), "in", length=4096, queue_depth=8)
    gap = deep.parts["period"] - deep.parts["transfer_seconds"]
    assert 2 * profile.turnaround_ns * 1e-9 <= gap < 2 * profile.turnaround_ns * 1e-9 + 0.2e-6
    assert deep.throughput < 380e6 and "set by the data pipe" in deep.formula
    # Writes pay one turn (the device ACKs their last packet; then its ERDY, the host's
    # answer), which the next write's prime, a whole data packet, hides in steady state: their
    # data pipe is the transfer and that prime, and the downstream lane, which carries the
    # prime too, binds.
    out = ceiling_for(_bus("small-burst"), "out", length=4096, queue_depth=8)
    terms = out.parts["bound_terms"]
    assert terms["data"] - out.parts["transfer_seconds"] == pytest.approx((1024 + 32) / 500e6)
    assert out.parts["period"] == terms["lane"] > terms["data"]
    assert "set by the lane" in out.formula
    # Streams primed before (the first queue's), nothing hides it: one stream the ERDY and
    # the host's 1 µs after the last (the simulation: 1,240 cycles apart, 1,085 moving data).
    link = usb3_link(_bus("small-burst"), "out", profile)
    stages = uas_run(link, profile, 4096, commands=8, queue_depth=8).stages
    starts = [stage["data stream"] for stage in stages]
    span = out.parts["transfer_seconds"]
    handshake = 20 / 500e6 + profile.turnaround_ns * 1e-9 - 8e-9  # (a bound's cycle off)
    assert [b - a for a, b in zip(starts, starts[1:], strict=False)] == pytest.approx(
        [span + handshake] * 7)


def test_every_packet_of_a_command_counts_on_its_datas_lane():
    """Behind the ideal host queued 4 KiB commands fill the lane their data go on: reads 4,224
    B of data packets, the SENSE IU, the device's five TPs and the link commands for the host's
    six other packets; writes the prime's 1,056 B besides."""
    assert lane_bytes("in", 4096, 1024) == 4096 + 4 * 48 + 48 + 5 * 20 + 6 * 16
    assert lane_bytes("out", 4096, 1024) == 4096 + 4 * 48 + 1056 + 64 + 3 * 20 + 6 * 16
    # busprobe's engine: one idle cycle after each of the host's three TPs on the downstream
    # lane; its own two after each of its TPs may carry its link commands, so none upstream.
    assert lane_bytes("in", 4096, 1024, BUSPROBE_DEVICE) == lane_bytes("in", 4096, 1024)
    assert lane_bytes("out", 4096, 1024, BUSPROBE_DEVICE) == lane_bytes("out", 4096, 1024) + 12
    for direction in ("in", "out"):
        deep = ceiling_for(_bus("ideal"), direction, length=4096, queue_depth=8)
        assert deep.parts["bound_terms"]["lane"] == deep.parts["period"]
        assert deep.parts["stepped"] <= deep.throughput * (1 + 1e-9)


def test_busprobes_engine_selects_the_next_read_stream_17_cycles_after_the_hosts_ack():
    """Behind small-burst queued 4 KiB reads are bound by the data pipe: with busprobe's
    engine each stream waits, besides the host's two turnarounds, for the engine to learn that
    the last one ended (its ERDY 17 cycles after the host's ACK, the least the link trace
    showed) and for its 2-cycle slower answer to the host's Start Stream (3 until it staged its
    next packet, 2026-12-06); the simulation read
    354.4 MB/s (2026-12-05), 98.8 % of the bound with them, 97.4 % without."""
    profile = load_usb3_profile("small-burst")
    link = usb3_link(_bus("small-burst"), "in", profile)
    ideal = uas_bound(link, profile, 4096, queue_depth=8)
    engine = uas_bound(link, profile, 4096, queue_depth=8, device=BUSPROBE_DEVICE)
    assert ideal.binding == engine.binding == "data"
    assert (engine.terms["data"] - ideal.terms["data"]) * 125e6 == pytest.approx(17 + 2)
    # Writes: the next write's prime, a whole data packet, hides it.
    link = usb3_link(_bus("small-burst"), "out", profile)
    assert uas_bound(link, profile, 4096, queue_depth=8, device=BUSPROBE_DEVICE).terms[
        "data"] == uas_bound(link, profile, 4096, queue_depth=8).terms["data"]


@pytest.mark.parametrize("direction", ["in", "out"])
def test_a_finite_runs_lane_ends_a_completion_after_its_last_packet(direction):
    """A run's clock stops at its last completion: its lane's bytes, all but the last
    packet's answers, and then the host's completion latency (20 µs behind small-burst; on IN
    the host's first prime and the device's answer first). Behind small-burst 45 queued
    4 KiB writes took 537.8 µs in the simulation, where the lane without its end said 503.7."""
    profile = load_usb3_profile("small-burst")
    link = usb3_link(_bus("small-burst"), direction, profile)
    run = uas_bound(link, profile, 4096, queue_depth=8, commands=45)
    lane = lane_bytes(direction, 4096, 1024) / link.rate
    ends = run.terms["lane"] - 45 * lane
    assert profile.completion_latency_us * 1e-6 - 0.3e-6 < ends < \
        profile.completion_latency_us * 1e-6
    ideal = load_usb3_profile("ideal")
    link = usb3_link(_bus("ideal"), direction, ideal)
    assert uas_bound(link, ideal, 4096, queue_depth=8, commands=45).terms["lane"] < 45 * (
        lane_bytes(direction, 4096, 1024) / link.rate)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"queue_depth": 33}, "at most 32 commands outstanding"),
])
def test_bad_input_is_refused_in_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ceiling_for(_bus("vl805"), "in", length=4096, **kwargs)


def test_bot_at_superspeed_is_untouched_and_uas_without_a_length_is_the_link():
    bot = ceiling_for(_bus("vl805", "bot"), "in", length=4096, queue_depth=1)
    assert bot.model == "usb3-ss link BOT"
    assert ceiling_for(_bus("vl805"), "in").throughput == ceiling_for(
        _bus("vl805", "stream"), "in").throughput


def test_busprobe_model_protocol_uas_prints_the_stepped_derivation(capsys):
    from busprobe.cli import main

    assert main(["model", "--device", "sim:usb3?host=vl805", "--protocol", "uas",
                 "--length", "4K", "--queue-depth", "8", "--direction", "in",
                 "--formula"]) == 0
    out = capsys.readouterr().out
    assert "in: 142.33 MB/s  (usb3-ss link UAS host profile vl805)" in out
    assert "each stream primed with an ACK TP, NRDY, selected by the device's ERDY" in out


@pytest.mark.parametrize(("direction", "change", "cycles"), [
    ("in", {"commands_first": False}, 4),  # the LGOOD + LCRD ahead of the SENSE IU
    ("in", {"sense_after": 0}, 2),  # that ERDY later than the packet's last beat
    ("in", {"host_tp_gap": 0}, 3),  # the ACK of the SENSE and two primes ahead of the IU
    ("out", {"host_tp_gap": 0}, 2),  # the ACK of the SENSE and the status prime
    ("out", {"answer_out": 0}, 4),  # the ACKs of the IU and of the last data packet
    # the SENSE IU after the ACK of the last data packet, less the 7 cycles the host's ACK TP
    # asking for it, behind that packet on the host's lane, takes to come anyway
    ("out", {"after_last": 0}, 6),
])
def test_each_thing_busprobes_link_shows_costs_a_short_command_at_qd_1_what_it_says(
        direction, change, cycles):
    """Behind the ideal host, 1 KiB commands one at a time: each of the engine's link-level
    times (read off the simulation's link trace) adds its cycles to a command, once."""
    profile = load_usb3_profile("ideal")
    link = usb3_link(_bus("ideal"), direction, profile)
    engine = uas_period(link, profile, 1024, queue_depth=1, device=BUSPROBE_DEVICE)
    without = uas_period(link, profile, 1024, queue_depth=1,
                         device=replace(BUSPROBE_DEVICE, **change))
    assert (engine - without) * 125e6 == pytest.approx(cycles)


@pytest.mark.parametrize("device", [IDEAL_DEVICE, BUSPROBE_DEVICE])
def test_a_writes_status_stream_is_answered_during_its_last_data_packet_not_after_its_ack(
        device):
    """A write's status stream is selected as its last data packet starts on the lane, so the
    host's answer (1 µs behind small-burst) overlaps that packet and its ACK: the SENSE IU
    follows the ACK by the device's own time, not by a turnaround and a TP (and, queued, not
    by the next command's prime the host queues at that ACK)."""
    profile = load_usb3_profile("small-burst")
    link = usb3_link(_bus("small-burst"), "out", profile)
    for length in (1024, 4096):
        stage = uas_run(link, profile, length, commands=1, queue_depth=1,
                        device=device).stages[0]
        after_ack = stage["SENSE end"] - stage["data end"]
        sense = dp_seconds(uas.SENSE_HEADER_SIZE)
        assert after_ack < sense + (device.after_last + 8) / 125e6 < profile.turnaround_ns * 1e-9
