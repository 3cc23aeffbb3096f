"""LUNA's header receiver sharing a busy lane: its LGOODs starve upstream, not behind
:class:`LinkCommandQueue`.

The bench is the link layer's transmit side as LUNA wires it (``usb3/link/layer.py``): the
``HeaderPacketReceiver``'s link commands and a packet transmitter into one
``SuperSpeedStreamArbiter``, link commands first. The transmitter sends data packets back to back
(264 words: a DPH and a 1024-byte DPP, two idle cycles between, as LUNA's does in an IN stream);
the host sends a header packet whenever it holds a credit and the protocol layer takes each at
once.
"""

from amaranth import Elaboratable, Module, Signal
from amaranth.sim import Simulator
from busprobe.gateware.usb3.link_commands import advertise_after_every_recovery, queue_link_commands
from busprobe.sim.usb3.framing import frame_header, parse_command
from luna.gateware.usb.stream import SuperSpeedStreamArbiter, USBRawSuperSpeedStream
from luna.gateware.usb.usb3.link.receiver import HeaderPacketReceiver

DATA_PACKET_WORDS = 264
FILLER = 0x5A5A5A5A  # the data packets' words (no link command looks like it)


class BusyTransmitter(Elaboratable):
    def __init__(self):
        self.source = USBRawSuperSpeedStream()

    def elaborate(self, platform):
        m = Module()
        count, gap = Signal(16), Signal(2)
        with m.If(gap != 0):
            m.d.ss += gap.eq(gap - 1)
        with m.Else():
            m.d.comb += [self.source.valid.eq(1), self.source.data.eq(FILLER)]
            with m.If(self.source.ready):
                m.d.ss += count.eq(count + 1)
                with m.If(count == DATA_PACKET_WORDS - 1):
                    m.d.ss += [count.eq(0), gap.eq(2)]
        return m


def run_busy_lane(*, queued, cycles=12_000, busy=True, timeline=None):
    """Returns (headers sent, LGOOD subtypes, LCRDs after the advertisement, most headers
    waiting for an LGOOD at once). Without ``busy`` the transmitter sends nothing; a
    ``timeline`` list gets (cycle, command, subtype) of every link command on the lane."""
    m = Module()
    m.submodules.receiver = receiver = HeaderPacketReceiver()
    m.submodules.arbiter = arbiter = SuperSpeedStreamArbiter()
    arbiter.add_stream(receiver.source)
    if busy:
        m.submodules.transmitter = transmitter = BusyTransmitter()
        arbiter.add_stream(transmitter.source)
    if queued:
        queue_link_commands(m, arbiter, receiver.source, flush=0)
    m.d.comb += [receiver.enable.eq(1), receiver.queue.ready.eq(1), arbiter.source.ready.eq(1)]
    out = {"LGOOD": [], "LCRD": [], "sent": 0, "waiting": 0}

    async def host(ctx):
        credits, sequence, lane, previous = 0, 0, [], (0, 0)
        for cycle in range(cycles):
            word = (ctx.get(arbiter.source.data), ctx.get(arbiter.source.ctrl))
            if ctx.get(arbiter.source.valid) and word[0] != FILLER:
                if previous[1] == 0xF and word[1] == 0:
                    command, subtype = parse_command(word[0].to_bytes(4, "little"))
                    out[command.name].append(subtype)
                    if timeline is not None:
                        timeline.append((cycle, command.name, subtype))
                    if command.name == "LCRD":
                        credits += 1
                previous = word
            if not lane and credits and out["LGOOD"]:  # after the device's advertisement
                credits -= 1
                # One idle word after the header: LUNA's receiver loses a header that follows
                # another at once (sim/usb3/link.py, LUNA_HEADER_GAP_SYMBOLS).
                lane = frame_header((0x8, 0, 0), sequence).words() + [(0, 0)]
                sequence = (sequence + 1) % 8
                out["sent"] += 1
            out["waiting"] = max(out["waiting"], out["sent"] - (len(out["LGOOD"]) - 1))
            data, ctrl = lane.pop(0) if lane else (0, 0)
            ctx.set(receiver.sink.valid, 1)
            ctx.set(receiver.sink.data, data)
            ctx.set(receiver.sink.ctrl, ctrl)
            await ctx.tick("ss")

    sim = Simulator(m)
    sim.add_clock(8e-9, domain="ss")
    sim.add_testbench(host)
    sim.run()
    return out["sent"], out["LGOOD"], len(out["LCRD"]) - 4, out["waiting"]


def test_upstream_receiver_starves_its_lgoods_on_a_busy_lane():
    """Documents the LUNA bug the queue works around: if this fails, upstream fixed it and
    :func:`queue_link_commands` can go."""
    sent, lgoods, lcrds, waiting = run_busy_lane(queued=False)
    assert sent > 30 and lcrds >= sent - 4  # credits come back, one per data packet
    assert len(lgoods) - 1 < sent // 4, (sent, len(lgoods) - 1)  # LGOODs do not
    assert waiting > 8


def test_queued_link_commands_acknowledge_every_header_in_order_on_a_busy_lane():
    sent, lgoods, lcrds, waiting = run_busy_lane(queued=True)
    # Every header has its LGOOD, in sequence after the advertisement (LGOOD_7). LUNA's FSM,
    # busy with credits, can send a header's LCRD before its LGOOD, so a fifth header may be
    # sent before the first is acknowledged; never the seven that exhaust the sequence
    # numbers (sim/usb3/link.py takes a seventh as a link error).
    assert lgoods == [(i - 1) % 8 for i in range(len(lgoods))]
    assert len(lgoods) - 1 >= sent - 4 and lcrds >= sent - 4
    assert waiting <= 6
    # Several commands leave per data packet: the host keeps its four credits busy.
    assert sent > 2 * 12_000 // (DATA_PACKET_WORDS + 2), sent


def test_on_a_free_lane_the_queue_costs_nothing_every_command_leaves_when_it_would_upstream():
    """An empty queue passes each word through in the cycle the lane takes it: with no data
    packets waiting, every LGOOD and LCRD is on the lane in the same cycle as without the queue
    (the single-direction OUT stream's case: its ACK TPs wait for nothing more)."""
    upstream, queued = [], []
    run_busy_lane(queued=False, busy=False, cycles=3000, timeline=upstream)
    run_busy_lane(queued=True, busy=False, cycles=3000, timeline=queued)
    assert len(upstream) > 40 and queued == upstream


def advertisement_after_recovery(*, fixed, leave_u0_after, headers=2, cut=False):
    """The link commands the receiver sends once back in U0, when the link left U0
    ``leave_u0_after`` cycles after the last word of ``headers`` headers the host sent (the
    device's LGOODs and LCRDs for them in flight), wired as :class:`.core.BurstLinkLayer` wires
    it: the queue dropping everything while out of U0, and with ``fixed`` the receiver given
    :func:`advertise_after_every_recovery`. With ``cut`` what is left of the headers when U0
    is left arrives as TS1 symbols (the host's TS1 cut them short)."""
    m = Module()
    m.submodules.receiver = receiver = HeaderPacketReceiver()
    m.submodules.arbiter = arbiter = SuperSpeedStreamArbiter()
    arbiter.add_stream(receiver.source)
    link_ready = Signal(init=1)
    queue_link_commands(m, arbiter, receiver.source, flush=~link_ready)
    if fixed:
        advertise_after_every_recovery(receiver)
    m.d.comb += [receiver.enable.eq(link_ready), receiver.queue.ready.eq(1),
                 arbiter.source.ready.eq(1)]
    commands = []

    async def host(ctx):
        lane = []
        for sequence in range(headers):
            lane += frame_header((0x8, 0, 0), sequence).words() + [(0, 0)]
        previous, back_at = (0, 0), None
        sent_at = 100 + len(lane)  # the cycle after the last header's idle word
        for cycle in range(sent_at + leave_u0_after + 160):
            if ctx.get(arbiter.source.valid):
                word = (ctx.get(arbiter.source.data), ctx.get(arbiter.source.ctrl))
                if previous[1] == 0xF and word[1] == 0 and back_at is not None:
                    commands.append(parse_command(word[0].to_bytes(4, "little")))
                previous = word
            if cycle == 100:
                ctx.set(receiver.sink.valid, 1)  # the advertisement is long done
            data, ctrl = lane.pop(0) if cycle >= 100 and lane else (0, 0)
            if cycle == sent_at + leave_u0_after:
                ctx.set(link_ready, 0)
                if cut:
                    lane = [(0x4A4A4A4A, 0)] * len(lane)
            if cycle == sent_at + leave_u0_after + 100:
                ctx.set(link_ready, 1)
                back_at = cycle
            ctx.set(receiver.sink.data, data)
            ctx.set(receiver.sink.ctrl, ctrl)
            await ctx.tick("ss")

    sim = Simulator(m)
    sim.add_clock(8e-9, domain="ss")
    sim.add_testbench(host)
    sim.run()
    return [(command.name, subtype) for command, subtype in commands]


def _advertises(commands, last_header):
    return commands == [("LGOOD", last_header)] + [("LCRD", credit) for credit in range(4)]


def _last_in_u0(leave_u0_after):
    """The last header whose check (a cycle after its last word reached the receiver) came
    while the link was in U0: 7 (none yet), 0 or 1."""
    return 7 if leave_u0_after < -5 else 0 if leave_u0_after < 0 else 1


def test_upstream_receiver_skips_its_advertisement_when_u0_is_left_mid_command():
    """Documents the LUNA bugs :class:`AdvertisingHeaderPacketReceiver` works around: if this
    fails, upstream changed and the subclass can go. Leaving U0 while the receiver sends the
    LGOODs and LCRDs of two headers, it sends no LGOOD after Recovery, LCRDs numbered on from
    before, or an LGOOD naming a header before the last (USB 3.2 §7.2.4.1.1 asks for LGOOD_1,
    LCRD_A..D); a header it received out of U0 counts, one cut short counts as bad (LBAD)."""
    missed = {after: advertisement_after_recovery(fixed=False, leave_u0_after=after)
              for after in range(-4, 16)}
    # What left for the void while out of U0 is not sent again, and the reset was skipped:
    # only an LGOOD (no credit: the host waits, then goes to Recovery again), nothing at all,
    # or an LGOOD naming a header before the last (the host would send the last again and
    # the device, expecting the one after it, would go to Recovery again).
    assert missed[2] == [("LGOOD", 1)], missed
    assert missed[8] == [], missed
    assert missed[6] == [("LGOOD", 0)] + [("LCRD", credit) for credit in range(4)], missed
    assert sum(not _advertises(commands, 1) for commands in missed.values()) >= 10, missed
    # Header 1 arriving whole after U0 was left: received (LGOOD_1 and a fifth credit);
    # cut short: an LBAD after Recovery.
    assert advertisement_after_recovery(fixed=False, leave_u0_after=-2) == \
        [("LGOOD", 1), ("LCRD", 0), ("LCRD", 1)]
    assert advertisement_after_recovery(fixed=False, leave_u0_after=-4, cut=True) == \
        [("LCRD", 0), ("LBAD", 0)]


def test_receiver_advertises_after_every_recovery_whenever_u0_is_left():
    """From before the first header ended to after every command for the last left, whole or
    cut short: always LGOOD of the last header received in U0, then LCRD_A..D, nothing else."""
    for cut in (False, True):
        for after in range(-8, 1 if cut else 16):  # from 0 on no header is left to cut
            commands = advertisement_after_recovery(fixed=True, leave_u0_after=after, cut=cut)
            assert _advertises(commands, _last_in_u0(after)), (cut, after, commands)
