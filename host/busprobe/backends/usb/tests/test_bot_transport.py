"""``--protocol bot`` on the libusb platform: CBW, data, CSW per transfer through the real
backend code (BotRun on the libusb transfer queue) against conftest's fake device with its BOT
framer (the ``usb2-full`` design's; the lean default has none and is refused in one line)."""

import json
from dataclasses import replace

import pytest
from busprobe.cli import main
from busprobe.protocol import bot, usb2
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sweep import Sweep, SweepPlan
from busprobe.targets import open_transport
from busprobe.transport import InvalidRequest, TransportError

SELECTOR = f"usb:{usb2.VID:04x}:{usb2.PID:04x}"
FULL = usb2.ALL_FEATURES


def bot_sweep(transport, lengths=(1000, 4096)):
    transport.min_bytes = 16 << 10
    transport.set_protocol("bot")
    plan = SweepPlan(("in", "out"), lengths, (1,), 3, ({},), Pattern.PRBS31)
    return Sweep(transport, plan).run()


def test_a_bot_sweep_frames_every_transfer_and_checks_every_byte(fake_bus):
    bus = fake_bus(features=FULL)
    with open_transport(SELECTOR) as transport:
        points = bot_sweep(transport)
        assert transport.bus.protocol == "bot"
    assert [p.errors for p in points] == [0] * 4
    # Three transfers per command, each one at a time: CBW, data, CSW.
    commands = sum(p.transfers for p in points) * 3
    assert bus.submits == 3 * commands and bus.max_in_flight == 1
    # The device counted the wrappers too; the transport takes them out of the data count.
    telemetry = points[0].telemetry[-1]
    assert telemetry["in_bytes"] == points[0].bytes_per_repeat + bot.CSW_SIZE * points[0].transfers
    assert telemetry["device_bytes"]["in"] == points[0].bytes_per_repeat
    assert points[0].device_samples == [None] * 3  # the host's window is BOT's only timing


def test_bot_refuses_a_queue_and_the_stock_design_in_one_line(fake_bus):
    fake_bus(features=FULL)
    transport = open_transport(SELECTOR)
    transport.set_protocol("bot")
    with pytest.raises(InvalidRequest, match="one command at a time: queue depth must be 1"):
        transport.validate("in", 4096, 4)
    with pytest.raises(InvalidRequest, match="protocol 'sata' is not offered"):
        transport.set_protocol("sata")
    transport.platform.vendor_requests = False
    with pytest.raises(InvalidRequest, match="stock design has no BOT framing"):
        transport.set_protocol("bot")


@pytest.mark.parametrize(("tamper", "message"), [
    (lambda csw: replace(csw, tag=csw.tag + 1), "CSW tag 0x2 answers no CBW in flight"),
    (lambda csw: replace(csw, status=bot.CswStatus.PHASE_ERROR),
     "command 0x1 ended with phase error"),
    (lambda csw: replace(csw, residue=12), "command 0x1 left a residue of 12 of 512 bytes"),
])
def test_a_csw_that_does_not_close_its_command_ends_the_stream(fake_bus, tamper, message):
    bus = fake_bus(features=FULL)
    with open_transport(SELECTOR) as transport:
        transport.set_protocol("bot")
        bus.bot.tamper = tamper
        with pytest.raises(TransportError, match=f"BOT: {message}"):
            transport.stream("in", 512, 2, 1, sink=lambda data: None)


@pytest.mark.parametrize("direction", ["in", "out"])
def test_a_refused_command_ends_the_stream_and_the_device_is_recovered(fake_bus, direction):
    bus = fake_bus(features=FULL)
    source = PatternStream(Pattern.COUNTER).take
    with open_transport(SELECTOR) as transport:
        transport.set_protocol("bot")
        bus.bot.refuse = True
        submits = bus.submits
        with pytest.raises(TransportError, match="BOT: command 0x1 ended with phase error "
                                                 "\\(residue 4096\\)"):
            transport.stream(direction, 4096, 3, 1, source=source, sink=lambda data: None)
        # IN: the CSW came in place of the data; OUT: the data went out (as CBWs the device
        # refused too) and the first CSW was read. No second command either way.
        assert bus.submits - submits == (2 if direction == "in" else 3)
        # Reset recovery gave the device a fresh framer: the next commands run clean.
        assert not bus.bot.refuse and not bus.bot.csws
        transport.set_pattern(Pattern.COUNTER)
        result = transport.stream(direction, 4096, 2, 1, source=PatternStream().take,
                                  sink=lambda data: None)
        assert result.bytes == 8192


def test_the_fake_answers_a_bad_cbw_like_the_gateware(fake_bus):
    # The fake device must frame as the gateware does, or the tests above prove nothing.
    bus = fake_bus(features=FULL)
    bus.control_write(0x40, usb2.Request.SET_DATA_MODE, usb2.DataMode.BOT, 0, b"", 0)
    framer = bus.bot
    bad = bytearray(bot.Cbw(5, 100, "in").pack())
    bad[0] ^= 1
    framer.transfer(usb2.EP_OUT, bytes(bad))
    buffer = bytearray(64)
    assert framer.transfer(usb2.EP_IN, buffer) == bot.CSW_SIZE
    assert bot.Csw.unpack(bytes(buffer[:13])) == bot.Csw(5, 100, bot.CswStatus.PHASE_ERROR)


def test_busprobe_sweep_protocol_bot_records_it_in_the_result(fake_bus, tmp_path, capsys):
    fake_bus(features=FULL)
    out = tmp_path / "bot.json"
    code = main(["sweep", "--device", SELECTOR, "--protocol", "bot", "--direction", "in",
                 "--lengths", "4096", "--min-bytes", "16K", "--no-progress",
                 "--json", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["bus"]["protocol"] == "bot" and doc["plan"]["queue_depths"] == [1]
    assert "protocol bot" in capsys.readouterr().err
    code = main(["sweep", "--device", SELECTOR, "--protocol", "bot", "--queue-depth", "4",
                 "--lengths", "4096", "--no-progress"])
    assert code == 2
    assert capsys.readouterr().err.strip().endswith("queue depth must be 1, not 4")


def test_bot_on_a_device_without_the_framer_is_one_line_naming_the_full_design(fake_bus,
                                                                               capsys):
    bus = fake_bus()  # the lean default design: GET_INFO names no feature
    fix = "build and flash the usb2-full design (busprobe build --design usb2-full)"
    # Chosen before open: refused as the INFO comes in, before any SET_DATA_MODE.
    transport = open_transport(SELECTOR)
    transport.set_protocol("bot")
    with pytest.raises(InvalidRequest, match="has no BOT framer") as refused:
        transport.open()
    assert str(refused.value).endswith(fix) and "\n" not in str(refused.value)
    assert bus.modes == [] and not bus.claimed
    # Asked of an open device: refused, still streaming.
    with open_transport(SELECTOR) as transport:
        assert transport.requests.features == usb2.NO_FEATURES
        with pytest.raises(InvalidRequest, match="has no BOT framer"):
            transport.set_protocol("bot")
        assert transport.bus.protocol == "stream"
    assert bus.modes == [usb2.DataMode.PATTERN]
    # The device would have STALLed it: what the refusal spares the user.
    with pytest.raises(bus.usb1.USBErrorPipe):
        bus.control_write(0x40, usb2.Request.SET_DATA_MODE, usb2.DataMode.BOT, 0, b"", 0)
    assert main(["sweep", "--device", SELECTOR, "--protocol", "bot", "--direction", "in",
                 "--lengths", "4096", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.endswith(fix), err
