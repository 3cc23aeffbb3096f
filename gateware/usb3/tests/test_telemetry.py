"""SuperSpeed telemetry: each event lands in its protocol word; the ITP window follows USB2's."""

from amaranth.sim import Simulator
from busprobe.gateware.usb3.telemetry import SuperSpeedTelemetry
from busprobe.protocol import usb3


def run(body):
    dut = SuperSpeedTelemetry()
    sim = Simulator(dut)
    sim.add_clock(8e-9, domain="ss")
    out = {}

    async def testbench(ctx):
        await body(ctx, dut)
        for _ in range(3):  # events are registered once before they count
            await ctx.tick("ss")
        words = [ctx.get(dut.words[i]) for i in range(usb3.TELEMETRY_WORDS)]
        out.update(usb3.unpack_telemetry(b"".join(w.to_bytes(4, "little") for w in words)))

    sim.add_testbench(testbench)
    sim.run()
    return out


async def pulse(ctx, dut, **fields):
    """One cycle with the given event fields set (``in_acked=1`` sets events.in.acked)."""
    targets = []
    for name, value in fields.items():
        group, _, field = name.partition("_")
        signal = dut.events[group][field] if group in ("in", "out") else dut.events[name]
        ctx.set(signal, value)
        targets.append(signal)
    await ctx.tick("ss")
    for signal in targets:
        ctx.set(signal, 0)


def test_events_count_into_their_words():
    async def body(ctx, dut):
        await pulse(ctx, dut, in_dp_start=1)
        await pulse(ctx, dut, in_acked=1, in_acked_bytes=1024, in_dps=1)
        await pulse(ctx, dut, in_acked=1, in_acked_bytes=100, in_dps=1, in_retry=1, in_eob=1)
        await pulse(ctx, dut, in_ack_tp=1, in_nump=16)
        await pulse(ctx, dut, in_ack_tp=1, in_nump=3)
        for length in (1, 2, 1):  # a burst of two DPs, then a new one
            await pulse(ctx, dut, in_burst_dp=1, in_burst_length=length)
        await pulse(ctx, dut, in_nrdy=1, in_erdy=1)
        await pulse(ctx, dut, out_acked=1, out_acked_bytes=0, out_ack_tp=1, out_nump=0)
        await pulse(ctx, dut, out_ack_tp=1, out_nump=15, out_sequence_error=1, out_retry=1)
        await pulse(ctx, dut, header_credit_stall=1)

    t = run(body)
    assert (t["in_bytes"], t["in_packets"], t["in_short"], t["in_zlps"]) == (1124, 2, 1, 0)
    assert (t["in_dps_sent"], t["in_retries"], t["in_eobs"]) == (2, 1, 1)
    assert (t["in_ack_tps"], t["in_nump_total"], t["in_nump_max"]) == (2, 19, 16)
    assert (t["in_bursts"], t["in_burst_max"], t["in_nrdys"], t["in_erdys"]) == (2, 2, 1, 1)
    assert (t["out_zlps"], t["out_ack_tps"], t["out_nump_zero"], t["out_nump_min"]) == (1, 2, 1, 0)
    assert (t["out_sequence_errors"], t["out_bad_dps"], t["header_credit_stalls"]) == (1, 1, 1)
    assert t["in_first_cycle"] < t["in_last_cycle"]


def test_the_window_spans_whole_intervals_from_the_first_to_the_second_to_last():
    async def body(ctx, dut):
        await pulse(ctx, dut, itp=1)  # interval 1: no data
        for interval_bytes in (100, 1024, 1024, 50):  # intervals 2..5 with IN data
            await pulse(ctx, dut, in_acked=1, in_acked_bytes=interval_bytes)
            await pulse(ctx, dut, itp=1)
        await pulse(ctx, dut, itp=1)  # interval 6: idle

    t = run(body)
    assert t["itps"] == 6 and t["data_intervals"] == 4
    assert (t["in_window_start_interval"], t["in_window_start_bytes"]) == (2, 100)
    assert (t["in_window_end_interval"], t["in_window_end_bytes"]) == (4, 2148)
    assert usb3.device_window(t, "in") == (2048, 2 / 8000)
    assert usb3.device_window(t, "out") is None


def test_clear_restores_the_initial_values():
    async def body(ctx, dut):
        await pulse(ctx, dut, out_ack_tp=1, out_nump=7, itp=1)
        await ctx.tick("ss")
        await ctx.tick("ss")
        ctx.set(dut.clear, 1)
        await ctx.tick("ss")
        ctx.set(dut.clear, 0)

    t = run(body)
    assert t["out_nump_min"] == 0xFFFF_FFFF and t["itps"] == 0 and t["out_ack_tps"] == 0
