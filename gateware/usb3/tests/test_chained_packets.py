"""The packet transmitter sends queued packets back to back, unless another stream waits for
the lane, and sends the same words as LUNA's otherwise.

The bench is LUNA's ``PacketTransmitter`` alone (as :class:`.header_crc.WordCrcPacketTransmitter`
and as :class:`.chained_packets.ChainedPacketTransmitter`): the partner's link commands (its
advertisement, four credits, then an LGOOD and an LCRD for each header) on its ``sink``, header
packets offered on its ``queue``, its lane always ready.
"""

from amaranth import Module
from amaranth.sim import Simulator
from busprobe.gateware.usb3.chained_packets import ChainedPacketTransmitter
from busprobe.gateware.usb3.header_crc import WordCrcPacketTransmitter
from busprobe.sim.usb3.framing import LinkCommand, frame_command
from luna.gateware.usb.usb3.link.transmitter import PacketTransmitter
from usb_protocol.types.superspeed import TransactionPacketSubtype

TRANSACTION_PACKET = 0x4
ACK, NRDY, ERDY = (int(TransactionPacketSubtype[name]) for name in ("ACK", "NRDY", "ERDY"))
IN = 1 << 7  # DW1's direction bit


def run_transmitter(chained, *, headers=6, yield_lane=lambda cycle: False, lbad_at=None,
                    cycles=300, subtypes=None, urgent=None):
    """Returns the lane, a (valid, data, ctrl) per cycle from the first header packet on, and
    how many headers the transmitter took. Every header is queued at once; ``yield_lane(cycle)``
    drives the chained transmitter's ``yield_lane``; ``lbad_at``: the partner sends an LBAD
    at that cycle (and no LGOOD or LCRD for any packet); ``subtypes``: each header's
    transaction packet subtype (DW1); ``urgent``: a list given the chained transmitter's
    ``urgent`` per lane cycle."""
    transmitter = PacketTransmitter()
    transmitter = (ChainedPacketTransmitter if chained else WordCrcPacketTransmitter).adopt(
        transmitter)
    m = Module()
    m.submodules.transmitter = transmitter
    lane, taken = [], []

    async def partner(ctx):
        commands = [frame_command(LinkCommand.LGOOD, 7)]
        commands += [frame_command(LinkCommand.LCRD, i) for i in range(4)]
        words = [word for command in commands for word in command.words()]
        acked, started = 0, False
        ctx.set(transmitter.enable, 1)
        ctx.set(transmitter.source.ready, 1)
        for cycle in range(cycles):
            if lbad_at is not None and cycle == lbad_at:
                words += frame_command(LinkCommand.LBAD).words()
            data, ctrl = words.pop(0) if words else (0, 0)
            ctx.set(transmitter.sink.valid, 1)
            ctx.set(transmitter.sink.data, data)
            ctx.set(transmitter.sink.ctrl, ctrl)
            ready = ctx.get(transmitter.bringup_complete)
            ctx.set(transmitter.queue.valid, ready and len(taken) < headers)
            ctx.set(transmitter.queue.header.dw0, TRANSACTION_PACKET | len(taken) << 16)
            if subtypes is not None and len(taken) < headers:
                ctx.set(transmitter.queue.header.dw1, subtypes[len(taken)])
            if chained:
                ctx.set(transmitter.yield_lane, yield_lane(len(lane)))
            if ctx.get(transmitter.queue.valid) and ctx.get(transmitter.queue.ready):
                taken.append(len(taken))
            word = (ctx.get(transmitter.source.valid), ctx.get(transmitter.source.data),
                    ctx.get(transmitter.source.ctrl))
            started = started or word[0]
            if started:
                lane.append(word)
                if urgent is not None:
                    urgent.append(ctx.get(transmitter.urgent))
            # Each header's LGOOD and LCRD once it has started.
            sent = sum(1 for valid, _, ctrl in lane if valid and ctrl == 0xF)
            if lbad_at is None and sent > acked and not words:
                words += frame_command(LinkCommand.LGOOD, acked % 8).words()
                words += frame_command(LinkCommand.LCRD, acked % 4).words()
                acked += 1
            await ctx.tick("ss")

    sim = Simulator(m)
    sim.add_clock(8e-9, domain="ss")
    sim.add_testbench(partner)
    sim.run()
    return lane, len(taken)


def _packets(lane):
    """The lane's header packets: (first cycle, the five words) each."""
    packets, index = [], 0
    while index < len(lane):
        valid, _, ctrl = lane[index]
        if valid and ctrl == 0xF:  # SHP SHP SHP EPF
            packets.append((index, tuple(word[1:] for word in lane[index:index + 5])))
            index += 5
        else:
            index += 1
    return packets


def _gaps(packets):
    return [b[0] - a[0] - 5 for a, b in zip(packets, packets[1:], strict=False)]


def test_luna_leaves_two_idle_cycles_between_two_queued_header_packets():
    lane, taken = run_transmitter(False, headers=4)
    packets = _packets(lane)
    assert taken == 4 and len(packets) == 4
    assert _gaps(packets) == [2, 2, 2]


def test_queued_header_packets_go_back_to_back_with_the_same_words():
    luna = _packets(run_transmitter(False, headers=4)[0])
    lane, taken = run_transmitter(True, headers=4)
    packets = _packets(lane)
    assert taken == 4 and _gaps(packets) == [0, 0, 0]
    assert [words for _, words in packets] == [words for _, words in luna]


def test_a_stream_waiting_for_the_lane_gets_the_packet_boundary_as_upstream():
    # yield_lane through the first packet's last word: the second packet waits LUNA's two
    # cycles (where the arbiter hands the lane over); the next ones follow at once.
    lane, _ = run_transmitter(True, headers=4, yield_lane=lambda cycle: cycle < 5)
    assert _gaps(_packets(lane)) == [2, 0, 0]


def test_an_lbad_during_a_chain_resends_every_unacknowledged_packet_as_luna_does():
    # Four packets queued (four credits), none acknowledged, an LBAD while the chain goes: the
    # packet on the lane ends, then all four again in order, with the delayed bit: the same
    # words as LUNA's retry.
    luna = _packets(run_transmitter(False, headers=4, lbad_at=25, cycles=200)[0])
    ours = _packets(run_transmitter(True, headers=4, lbad_at=25, cycles=200)[0])
    numbers = [words[1][0] >> 16 for _, words in ours]
    assert numbers == list(range(len(ours) - 4)) + [0, 1, 2, 3] and len(ours) > 5
    assert [words for _, words in ours[-4:]] == [words for _, words in luna[-4:]]
    assert all(words[4][0] >> 25 & 1 for _, words in ours[-4:])  # DW3's delayed bit


def test_an_in_erdy_and_the_headers_ahead_of_it_are_urgent_until_it_goes():
    # TP, TP, ERDY (an IN endpoint's), TP queued one a cycle: urgent (ahead of link commands)
    # once the ERDY is in the buffers (the first packet is on the lane by then) until the
    # ERDY's first word, not for the packet after it.
    urgent = []
    lane, taken = run_transmitter(True, headers=4, urgent=urgent,
                                  subtypes=[ACK, NRDY, ERDY | IN, ACK])
    packets = _packets(lane)
    assert taken == 4 and len(packets) == 4
    erdy_start = packets[2][0]
    assert all(urgent[packets[0][0] + 4:erdy_start]) and not any(urgent[erdy_start + 1:])


def test_without_an_in_erdy_nothing_is_urgent():
    # An OUT endpoint's ERDY is answered with data packets, which need the LCRDs.
    for subtypes in ([ACK, NRDY, ACK, NRDY], [ACK, NRDY, ERDY, ACK]):
        urgent = []
        run_transmitter(True, headers=4, urgent=urgent, subtypes=subtypes)
        assert urgent and not any(urgent), subtypes
