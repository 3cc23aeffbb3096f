"""``--protocol bot`` end to end: the BOT framer of the full USB2 design (``sim:usb2?design=full``)
in Verilator, driven by the host driver over the simulated host controller (one simulator for the
whole module, ~25 s); the lean default design refuses it in one line."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from busprobe.backends.usb.bot import BotRun
from busprobe.backends.usb.transfers import run_plan
from busprobe.cli import main
from busprobe.model import ceiling_for
from busprobe.protocol import bot, usb2
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sweep import Sweep, SweepPlan
from busprobe.targets import open_transport

from .storage_client import bulk

pytestmark = pytest.mark.sim


@pytest.fixture(scope="module")
def xhci_bot(usb2_full_model: Path):
    with open_transport("sim:usb2?host=xhci&design=full") as transport:
        assert transport.requests.features == usb2.ALL_FEATURES  # as its GET_INFO said
        transport.set_protocol("bot")
        yield transport


def test_bot_on_the_lean_design_is_one_line_naming_the_full_one(capsys):
    # Refused from the design before a simulator is started or built.
    assert main(["sweep", "--device", "sim:usb2?host=xhci", "--protocol", "bot",
                 "--direction", "in", "--lengths", "4K", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "has no BOT framer" in err
    assert err.endswith("use sim:usb2?host=xhci&design=full"), err


def test_a_bot_sweep_is_clean_and_on_the_bot_model(xhci_bot):
    plan = SweepPlan(("in", "out"), (512, 4096), (1,), 3, ({},), Pattern.PRBS31)
    points = Sweep(xhci_bot, plan).run()
    assert [p.errors for p in points] == [0] * 4
    for point in points:
        # The point's ceiling steps the same schedule rules over the same run of commands.
        assert max(point.samples) <= point.ceiling
        assert point.samples[1] / point.ceiling == pytest.approx(1.0, abs=0.01)
        stream = ceiling_for(replace(xhci_bot.bus, protocol="stream"), point.spec.direction,
                             length=point.spec.length, queue_depth=1).throughput
        assert point.samples[1] < 0.85 * stream  # three turnarounds per command, not one


def _csw_after(transport, packet: bytes) -> bot.Csw:
    platform = transport.platform
    bulk(platform, usb2.EP_OUT, packet)
    return bot.Csw.unpack(bulk(platform, usb2.EP_IN, bot.CSW_SIZE))


def test_the_gateware_answers_a_bad_cbw_with_a_phase_error_and_stays_in_step(xhci_bot):
    good = bot.Cbw(0x5A5A, 4096, "in").pack()
    assert _csw_after(xhci_bot, b"USBX" + good[4:]) == bot.Csw(0x5A5A, 4096,
                                                               bot.CswStatus.PHASE_ERROR)
    assert _csw_after(xhci_bot, good[:30]) == bot.Csw(0x5A5A, 4096, bot.CswStatus.PHASE_ERROR)
    # Through the simulated driver: the CSW comes in place of the data, and no command follows.
    bad = b"USBX" + bot.Cbw(0x77, 4096, "in").pack()[4:]
    run = BotRun([bad, bad], "in", 4096, None, what="BOT")
    result = run.result(*run_plan(xhci_bot.platform, run, what="BOT", silence=10.0))
    assert [bot.Csw.unpack(c) for c in run.csws] == [
        bot.Csw(0x77, 4096, bot.CswStatus.PHASE_ERROR)]
    assert result.bytes == 0
    # A zero-length command, then real ones through the driver: the framer is in step again.
    assert _csw_after(xhci_bot, bot.Cbw(77, 0, "out").pack()) == bot.Csw(77, 0, 0)
    xhci_bot.set_pattern(Pattern.COUNTER)
    expected, errors = PatternStream(Pattern.COUNTER), []
    result = xhci_bot.stream("in", 1000, 2, 1,
                             sink=lambda data: errors.append(expected.check(data).errors))
    assert result.bytes == 2000 and expected.offset == 2000 and sum(errors) == 0


def test_a_short_out_data_phase_leaves_a_residue(xhci_bot):
    platform = xhci_bot.platform
    cbw = bot.Cbw(0xC0FFEE, 1024, "out").pack()
    bulk(platform, usb2.EP_OUT, cbw)
    bulk(platform, usb2.EP_OUT, bytes(600))  # ends with a short packet
    assert bot.Csw.unpack(bulk(platform, usb2.EP_IN, bot.CSW_SIZE)) == bot.Csw(
        0xC0FFEE, 424, bot.CswStatus.PASSED)
