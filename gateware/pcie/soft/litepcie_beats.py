"""Between the soft endpoint's TLP streams (bytes or DWs) and the 64-bit beats of a LitePCIe PHY
stream.

Beat format (as :mod:`busprobe.gateware.pcie.tlp_beats` states it for every LitePCIe PHY and
busprobe's ``SimPCIEPHY``): the TLP's DWs in order, two per beat, the first in ``dat[0:32]``,
each the big-endian value of its four wire bytes (wire byte 0 of a DW in bits 31:24); ``be``
a bit per byte (``0x0F`` on a last beat holding one DW), ``last`` on the TLP's last beat. A
TLP is always whole DWs (header, data and digest), so a beat holds one or two.
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .tlp_router import APP_TLP_BYTE
from .word_framer import TLP_BYTE, unit_size

__all__ = ["BEAT", "BytesToBeats", "BeatsToBytes"]

#: A LitePCIe PHY stream beat (its ``phy_layout(64)`` fields, with the stream's ``last``).
BEAT = data.StructLayout({"dat": 64, "be": 8, "last": 1})


def _lane(index):
    """Where wire byte ``index`` (0..7) of a beat sits in ``dat``: DW index // 4, big-endian."""
    return 32 * (index // 4) + 8 * (3 - index % 4)


def _unit_lanes(dat, index, unit_bytes):
    """The ``dat`` bits of a beat's unit ``index`` as a unit (its wire byte 0 in bits 7:0):
    each of its bytes where :func:`_lane` puts it, so a DW is its beat lane byte-swapped."""
    return Cat(*(dat[_lane(unit_bytes * index + k):_lane(unit_bytes * index + k) + 8]
                 for k in range(unit_bytes)))


class BytesToBeats(wiring.Component):
    """Received TLPs, a byte or a DW a clock (the router's ``source``), packed into beats.

    Attributes
    ----------
    sink: stream of ``unit``, input
    source: stream of BEAT, output
        A beat is offered once its 8 bytes (2 DWs), or the TLP's last, have come; the next unit
        is taken in the clock the beat leaves, so a unit a clock passes when ``source`` is
        ready.

    Parameters
    ----------
    unit: StructLayout
        :data:`~.tlp_router.APP_TLP_BYTE` (the default) or :data:`~.tlp_router.APP_TLP_DW`
        (the four-symbol link's).
    """

    def __init__(self, *, unit: data.StructLayout = APP_TLP_BYTE):
        self._unit_bytes = unit_size(unit)
        super().__init__({
            "sink": In(stream.Signature(unit)),
            "source": Out(stream.Signature(BEAT)),
        })

    def elaborate(self, platform):
        m = Module()
        unit_bytes = self._unit_bytes
        per_beat = 8 // unit_bytes
        beat = Signal(BEAT)
        count = Signal(range(per_beat + 1))  # units in ``beat``
        full = Signal()  # ``beat`` is complete and offered
        taken = self.source.valid & self.source.ready
        # A unit is taken every clock: into a fresh beat as the full one leaves (the link
        # delivers a unit a clock; a clock lost a beat would back the router's store up).
        fresh, fresh_count = Signal(BEAT), Signal(range(per_beat + 1))
        m.d.comb += [self.source.valid.eq(full), self.source.payload.eq(beat),
                     self.sink.ready.eq(~full | self.source.ready),
                     fresh.eq(Mux(taken, 0, beat)), fresh_count.eq(Mux(taken, 0, count))]
        m.d.sync += [beat.eq(fresh), count.eq(fresh_count), full.eq(full & ~taken)]
        with m.If(self.sink.valid & self.sink.ready):
            with m.Switch(fresh_count):
                for i in range(per_beat):
                    with m.Case(i):
                        m.d.sync += [
                            _unit_lanes(beat.dat, i, unit_bytes).eq(self.sink.payload.data),
                            beat.be[unit_bytes * i:unit_bytes * (i + 1)].eq(-1)]
            m.d.sync += count.eq(fresh_count + 1)
            with m.If(self.sink.payload.last | (fresh_count == per_beat - 1)):
                m.d.sync += [full.eq(1), beat.last.eq(self.sink.payload.last)]
        return m


class BeatsToBytes(wiring.Component):
    """TLPs to send, as beats (a LitePCIe PHY's ``sink``), a byte or a DW a clock.

    A beat is taken whole and its 4 or 8 bytes (1 or 2 DWs) sent; the next beat is taken as
    the last unit of this one goes, so a TLP stays valid from first unit to last as long as
    its beats come at least every 8 clocks with bytes, every 2 with DWs (LitePCIe's
    packetizer at 64 bits a beat against one byte a symbol time). A source that can pause
    longer needs a TLP buffer in front (to do).

    Attributes
    ----------
    sink: stream of BEAT, input
    source: stream of ``unit``, output

    Parameters
    ----------
    unit: StructLayout
        :data:`~.word_framer.TLP_BYTE` (the default) or :data:`~.word_framer.TLP_DW` (the
        link's).
    """

    def __init__(self, *, unit: data.StructLayout = TLP_BYTE):
        self._unit_bytes = unit_size(unit)
        super().__init__({
            "sink": In(stream.Signature(BEAT)),
            "source": Out(stream.Signature(unit)),
        })

    def elaborate(self, platform):
        m = Module()
        unit_bytes = self._unit_bytes
        per_beat = 8 // unit_bytes
        beat = Signal(BEAT)
        have = Signal()
        index = Signal(range(per_beat))
        units_in_beat = Mux(beat.be[4:].any(), per_beat, per_beat // 2)
        end_of_beat = index == units_in_beat - 1
        lanes = [_unit_lanes(beat.dat, i, unit_bytes) for i in range(per_beat)]
        with m.Switch(index):
            for i in range(per_beat):
                with m.Case(i):
                    m.d.comb += self.source.payload.data.eq(lanes[i])
        m.d.comb += [self.source.valid.eq(have),
                     self.source.payload.last.eq(beat.last & end_of_beat),
                     self.sink.ready.eq(~have | (self.source.ready & end_of_beat))]
        with m.If(self.source.valid & self.source.ready):
            m.d.sync += index.eq(Mux(end_of_beat, 0, index + 1))
            with m.If(end_of_beat):
                m.d.sync += have.eq(0)
        with m.If(self.sink.valid & self.sink.ready):
            m.d.sync += [beat.eq(self.sink.payload), have.eq(1), index.eq(0)]
        return m
