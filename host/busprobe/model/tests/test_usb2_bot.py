"""The BOT ceiling: three stages per command, each paying the host profile's turnaround."""

from dataclasses import replace

import pytest
from busprobe.model import ceiling_for
from busprobe.model.usb2_bot import bot_command
from busprobe.model.usb2_hosts import load_profile
from busprobe.protocol.usb2_wire import UFRAME_S
from busprobe.transport import BusDescription

STREAM = BusDescription("usb2-hs", "high", max_packet_size=512)


@pytest.mark.parametrize("host", ["ideal", "ehci", "xhci"])
@pytest.mark.parametrize("direction", ["in", "out"])
def test_bot_costs_most_at_small_lengths_and_fades_at_large_ones(host, direction):
    stream_bus = replace(STREAM, host_profile=host)
    bot_bus = replace(stream_bus, protocol="bot")
    overheads = []
    for length in (512, 4096, 65536, 1 << 20):
        stream = ceiling_for(stream_bus, direction, length=length, queue_depth=1).throughput
        framed = ceiling_for(bot_bus, direction, length=length, queue_depth=1).throughput
        overheads.append(1 - framed / stream)
    # The ideal host has no turnaround: only the wrappers' line time is left, hidden at 4 KiB.
    assert all(-1e-3 < o < 0.7 for o in overheads)
    assert overheads == sorted(overheads, reverse=True)
    assert overheads[0] > (0.15 if host == "ideal" else 0.6) and overheads[-1] < 0.05


@pytest.mark.parametrize("host", ["ehci", "xhci"])
def test_a_command_is_its_three_stages_and_three_resubmits(host):
    profile = load_profile(host)
    times = bot_command(profile, "in", 4096)
    total = times["CBW"] + times["data"] + times["CSW"] + 3 * times["resubmit"]
    assert times["command"] == pytest.approx(total, rel=1e-9)
    # Each wrapper stage is one short packet plus the completion latency (and, on EHCI, the wait
    # for the next microframe boundary).
    for stage in ("CBW", "CSW"):
        assert profile.completion_latency_us * 1e-6 < times[stage] < \
            profile.completion_latency_us * 1e-6 + UFRAME_S + 3e-6


def test_on_ehci_every_command_takes_whole_microframes():
    # Completions land on microframe boundaries, so the command repeats in whole microframes.
    for length in (512, 3000, 65536):
        period = bot_command(load_profile("ehci"), "out", length)["command"]
        assert period / UFRAME_S == pytest.approx(round(period / UFRAME_S), abs=1e-6)


def test_the_bot_ceiling_has_no_queue_and_shows_its_derivation():
    bus = replace(STREAM, host_profile="xhci", protocol="bot")
    one = ceiling_for(bus, "in", length=4096, queue_depth=1)
    deep = ceiling_for(bus, "in", length=4096, queue_depth=8)
    assert one.throughput == deep.throughput
    assert "CBW (31 B OUT) -> data (4096 B IN) -> CSW (13 B IN)" in one.formula
    assert one.model.endswith("BOT") and one.parts["protocol"] == "bot"
    # Without a length the figure is what the bus allows, BOT or not.
    assert ceiling_for(bus, "in").throughput == ceiling_for(replace(bus, protocol="stream"),
                                                            "in").throughput


def test_busprobe_model_protocol_bot_prints_the_per_command_derivation(capsys):
    from busprobe.cli import main

    assert main(["model", "--device", "sim:usb2?host=ehci", "--protocol", "bot",
                 "--length", "4K", "--direction", "in", "--formula"]) == 0
    out = capsys.readouterr().out
    assert "host profile ehci, BOT framing" in out and "in: 5.46 MB/s" in out
    # EHCI: each stage ends on a microframe boundary, 210 µs after the driver submitted it.
    assert "stepped: CBW 210.00 + data 210.00 + CSW 210.00 + 3 × resubmit 40.00" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["--device", "sim:usb2", "--protocol", "bot"], "--protocol bot needs --length"),
    (["--device", "sim:pcie", "--protocol", "bot", "--length", "4K"], "sim:pcie is a PCIe device"),
    (["--device", "sim:usb2", "--protocol", "nosuch", "--length", "4K"],
     "one of stream, bot, uas"),
    (["--device", "sim:usb2", "--protocol", "bot", "--length", "4K", "--direction", "loopback"],
     "in or out, not loopback"),
])
def test_busprobe_model_protocol_refuses_what_bot_cannot_mean(capsys, argv, message):
    from busprobe.cli import main

    assert main(["model", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
