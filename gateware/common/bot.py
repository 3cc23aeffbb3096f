"""Bulk-Only Transport framing between the bulk endpoints' packet streams and the pattern engines.

The constants and layouts are :mod:`busprobe.protocol.bot`'s; this is their gateware twin.
"""

from amaranth import Cat, Const, Module, Mux, ResetInserter, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.bot import (
    CBW_FLAG_IN,
    CBW_OFFSETS,
    CBW_SIGNATURE,
    CBW_SIZE,
    CSW_SIGNATURE,
    CSW_SIZE,
    CswStatus,
)

from .packet_stream import PacketStreamSignature

__all__ = ["BotFramer"]


class BotFramer(wiring.Component):
    """USB mass storage Bulk-Only Transport, one command at a time, on packet streams.

    Waits for a CBW on ``out_packets``; a packet of exactly 31 bytes starting with ``USBC`` starts
    a command of ``dCBWDataTransferLength`` bytes in the direction of ``bmCBWFlags`` bit 7:

    - IN: that many bytes of ``source`` go to ``in_packets``, ``last`` on the final beat (a short
      packet, or a full one with no ZLP: the host asked for exactly this length);
    - OUT: that many bytes of ``out_packets`` go to ``checked``. A short packet ends the data
      phase early (the CSW's residue says how much is missing); a packet running past the
      length has its excess dropped and the CSW says phase error (BOT §6.7, case Ho > Do).

    Then the 13-byte CSW goes to ``in_packets`` as a packet of its own, with the CBW's tag, the
    residue and the status. Any other packet where a CBW belongs (wrong length or signature) is
    answered at once with a CSW of status phase error, the tag it carried and a residue of the
    whole length it asked for, and no data phase, as bridge chips answer a CBW they cannot take;
    the framer then waits for the next CBW. The command block is not interpreted: the data are
    the pattern streams, so a command moves bytes and nothing else.

    ``restart`` (SET_DATA_MODE, SET_PATTERN) drops whatever command is in progress.

    With ``width`` > 1 (USB 3.0's 32-bit streams) the framing is the same with ``keep`` lanes;
    ``source`` is then taken a whole beat at a time, so a data length that is not a multiple of
    ``width`` skips the rest of the last beat's bytes in the IN pattern.

    Attributes
    ----------
    restart: Signal(), input
        Strobe: wait for a CBW again, forgetting any command in progress.
    out_packets: PacketStreamSignature(width), input
        Packets the OUT endpoint received and ACKed.
    in_packets: PacketStreamSignature(width), output
        Packets for the IN endpoint: the data of IN commands, then every CSW.
    source: stream.Signature(8 * width), input
        Bytes to send in IN data phases (the pattern source).
    checked: PacketStreamSignature(width), output
        Bytes of OUT data phases (to the pattern checker); ``last`` ends each command's data.

    Parameters
    ----------
    width: int
        Bytes per beat of every stream.
    max_packet_size: int
        wMaxPacketSize of the bulk endpoints (tells a short OUT packet from a full one).
    domain: str
        Clock domain.
    """

    def __init__(self, *, width=1, max_packet_size=512, domain="usb"):
        self._width = width
        self._max_packet_size = max_packet_size
        self._domain = domain
        super().__init__({
            "restart": In(1),
            "out_packets": In(PacketStreamSignature(width)),
            "in_packets": Out(PacketStreamSignature(width)),
            "source": In(stream.Signature(8 * width)),
            "checked": Out(PacketStreamSignature(width)),
        })

    def _lanes(self, beat):
        """``(lane_valid, count)``: which bytes of a packet-stream beat carry data, and how many."""
        if self._width == 1:
            return Const(1, 1), Const(1, 1)
        return beat.keep, sum(beat.keep[i] for i in range(self._width))

    def _beat(self, m, port, data, count, last):
        """Drive ``port``'s payload: the low ``count`` bytes of ``data`` (``count`` is ignored at
        width 1, where a beat is one byte)."""
        m.d.comb += [port.payload.data.eq(data), port.payload.last.eq(last)]
        if self._width > 1:
            lanes = Signal(range(self._width + 1))
            m.d.comb += [lanes.eq(count),
                         port.payload.keep.eq((Const(1, self._width + 1) << lanes) - 1)]

    def elaborate(self, platform):
        m = Module()
        # restart returns every register of the framing to its reset value at once, whatever
        # state it is in: simpler than a restart branch in every state.
        framing = Module()
        self._framing(framing)
        m.submodules.framing = ResetInserter({self._domain: self.restart})(framing)
        return m

    def _framing(self, m):
        sync = m.d[self._domain]
        width, mps = self._width, self._max_packet_size
        out, inp = self.out_packets, self.in_packets
        lane_bits = max(1, (width - 1).bit_length() + 1)

        cbw = Signal(8 * CBW_SIZE)
        received = Signal(range(CBW_SIZE + width + 1))  # CBW bytes so far; stops past 31
        remaining = Signal(32)   # bytes of the data phase still to move
        packet_bytes = Signal(range(mps + width + 1))  # OUT: bytes of the packet in progress
        tag = Signal(32)
        residue = Signal(32)
        status = Signal(8)
        csw_index = Signal(range(CSW_SIZE // width + 2))

        def word(name):
            return cbw[8 * CBW_OFFSETS[name]:][:32]

        csw = Cat(Const(CSW_SIGNATURE, 32), tag, residue, status)
        if CSW_SIZE % width:
            csw = Cat(csw, Const(0, 8 * (width - CSW_SIZE % width)))
        lane_valid, lane_count = self._lanes(out.payload)

        with m.FSM(domain=self._domain):
            with m.State("CBW"):
                m.d.comb += out.ready.eq(1)
                with m.If(out.valid):
                    # Each byte lands at its offset; bytes past 31 only push the count past it.
                    for lane in range(width):
                        for offset in range(CBW_SIZE):
                            with m.If(lane_valid[lane] & (received + lane == offset)):
                                sync += cbw.word_select(offset, 8).eq(
                                    out.payload.data.word_select(lane, 8))
                    with m.If(received <= CBW_SIZE):
                        sync += received.eq(received + lane_count)
                    with m.If(out.payload.last):
                        m.next = "DECODE"

            with m.State("DECODE"):
                # The fields are latched here, so the next CBW starts from zeros: a short bad one
                # echoes the bytes it carried, not the last good command's.
                sync += [received.eq(0), packet_bytes.eq(0), tag.eq(word("tag")), cbw.eq(0)]
                length = word("data_transfer_length")
                flags = cbw.word_select(CBW_OFFSETS["flags"], 8)
                with m.If((received == CBW_SIZE) & (word("signature") == CBW_SIGNATURE)):
                    sync += [remaining.eq(length), residue.eq(0), status.eq(CswStatus.PASSED)]
                    with m.If(length == 0):
                        m.next = "CSW"
                    with m.Elif(flags & CBW_FLAG_IN):
                        m.next = "DATA_IN"
                    with m.Else():
                        m.next = "DATA_OUT"
                with m.Else():
                    sync += [residue.eq(length), status.eq(CswStatus.PHASE_ERROR)]
                    m.next = "CSW"

            with m.State("DATA_IN"):
                final = remaining <= width
                m.d.comb += [inp.valid.eq(self.source.valid), self.source.ready.eq(inp.ready)]
                self._beat(m, inp, self.source.payload,
                           Mux(final, remaining[:lane_bits], width), final)
                with m.If(inp.valid & inp.ready):
                    sync += remaining.eq(remaining - width)
                    with m.If(final):
                        sync += remaining.eq(0)
                        m.next = "CSW"

            with m.State("DATA_OUT"):
                over = lane_count > remaining
                taken = Mux(over, remaining, lane_count)
                left = Signal.like(remaining)
                packet_end = Signal.like(packet_bytes)
                short_end = out.payload.last & (packet_end < mps)
                m.d.comb += [
                    left.eq(remaining - taken),
                    packet_end.eq(packet_bytes + lane_count),
                    out.ready.eq(self.checked.ready),
                    self.checked.valid.eq(out.valid),
                ]
                self._beat(m, self.checked, out.payload.data, taken, (left == 0) | short_end)
                with m.If(out.valid & out.ready):
                    sync += [remaining.eq(left), packet_bytes.eq(packet_end)]
                    with m.If(out.payload.last):
                        sync += packet_bytes.eq(0)
                    with m.If(over):
                        sync += status.eq(CswStatus.PHASE_ERROR)
                    with m.If((left == 0) & ~out.payload.last):
                        m.next = "DRAIN"
                    with m.Elif((left == 0) | short_end):
                        sync += residue.eq(left)
                        m.next = "CSW"

            with m.State("DRAIN"):
                # The host sent more than the CBW announced: the rest of the packet goes nowhere.
                m.d.comb += out.ready.eq(1)
                with m.If(out.valid):
                    sync += status.eq(CswStatus.PHASE_ERROR)
                    with m.If(out.payload.last):
                        sync += packet_bytes.eq(0)
                        m.next = "CSW"

            with m.State("CSW"):
                first = csw_index * width
                final = first + width >= CSW_SIZE
                m.d.comb += inp.valid.eq(1)
                self._beat(m, inp, csw.word_select(csw_index, 8 * width),
                           Mux(final, CSW_SIZE - first, width), final)
                with m.If(inp.ready):
                    sync += csw_index.eq(csw_index + 1)
                    with m.If(final):
                        sync += csw_index.eq(0)
                        m.next = "CBW"
