"""The 8b/10b scrambler (§4.2.1.3) for the PHY: several symbols a clock, both directions."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_scrambler import SEED, TS_UNSCRAMBLED, lfsr_advance, scramble_key
from busprobe.protocol.pcie_symbols import KCode

__all__ = ["Scrambler", "scrambler_word"]


def scrambler_word(width: int, extra: int) -> data.StructLayout:
    """``width`` packed symbols (symbol 0 first on the wire) and ``extra`` bits that travel with
    them unchanged (the receive side's decode errors, the transmit side's electrical idle)."""
    return data.StructLayout({"symbols": data.ArrayLayout(9, width), "extra": extra})


def _linear(m, value, function, width_out: int, name: str):
    """``function`` (linear over GF(2)) of ``value`` as an XOR network: column ``j`` is
    ``function`` of unit vector ``j``, as :class:`~.crc.WordCrc` builds its own."""
    columns = [function(1 << j) for j in range(len(value))]
    out = Signal(width_out, name=name)
    for i in range(width_out):
        terms = [value[j] for j in range(len(value)) if columns[j] >> i & 1]
        bit = terms[0] if terms else Const(0)
        for term in terms[1:]:
            bit = bit ^ term
        m.d.comb += out[i].eq(bit)
    return out


class Scrambler(wiring.Component):
    """:class:`busprobe.protocol.pcie_scrambler.Scrambler` on ``width`` symbols a clock.

    Scrambling and descrambling are the same operation, so the transmit side and the receive
    side each use one of these. The symbols of a word are taken in order, each from the state
    the one before it left (COM resets the LFSR, SKP leaves it, a TS's data goes unscrambled),
    and the result is registered: ``source`` is ``sink`` one clock later. A word without
    ``valid`` changes nothing (the DCU's receiver before it is locked; the transmit side while
    it has nothing). The LFSR advance and the key are XOR networks computed from the
    reference's :func:`~busprobe.protocol.pcie_scrambler.lfsr_advance` and
    :func:`~busprobe.protocol.pcie_scrambler.scramble_key`, so they cannot drift from it.

    Attributes
    ----------
    sink: stream of :func:`scrambler_word`, input (always ready)
    source: stream of :func:`scrambler_word`, output
        The same words, scrambled (or descrambled), ``extra`` unchanged.

    Parameters
    ----------
    width: int
        Symbols a clock (2 on the DCU's 16-bit interface).
    extra: int
        Bits carried beside each word.
    domain: str
        The clock domain it runs in.
    """

    def __init__(self, *, width: int = 2, extra: int = 1, domain: str = "sync"):
        self._width, self._domain = width, domain
        layout = scrambler_word(width, extra)
        super().__init__({"sink": In(stream.Signature(layout, always_ready=True)),
                          "source": Out(stream.Signature(layout, always_ready=True))})

    def elaborate(self, platform):
        m = Module()
        sync = m.d[self._domain]
        state = Signal(16, init=SEED)
        after_com = Signal()  # the last symbol was a COM
        unscrambled = Signal(range(TS_UNSCRAMBLED + 1))  # symbols of a TS still to go

        s, a, u = state, after_com, unscrambled
        for index in range(self._width):
            symbol = self.sink.p.symbols[index]
            is_com, is_skp = symbol == KCode.COM, symbol == KCode.SKP
            is_k = symbol[8]
            # Symbol 1 of a TS (link number or PAD) or the compliance pattern's data opens the
            # unscrambled window; a SKP or any other K code after a COM does not.
            opens = a & (~is_k | (symbol == KCode.PAD))
            left = Mux(opens, TS_UNSCRAMBLED, u)
            exempt = left != 0
            key = _linear(m, s[8:], lambda v: scramble_key(v << 8), 8, f"key{index}")
            advanced = _linear(m, s, lfsr_advance, 16, f"advanced{index}")
            sync += self.source.p.symbols[index].eq(
                Mux(is_k | exempt, symbol, Cat(symbol[:8] ^ key, symbol[8])))
            # What the next symbol starts from.
            s_next, a_next = Signal(16, name=f"state{index}"), Signal(name=f"after_com{index}")
            u_next = Signal.like(unscrambled, name=f"unscrambled{index}")
            m.d.comb += [
                s_next.eq(Mux(is_com, SEED, Mux(is_skp, s, advanced))),
                a_next.eq(is_com),
                u_next.eq(Mux(is_com, 0, Mux(is_skp, u, Mux(exempt, left - 1, 0)))),
            ]
            s, a, u = s_next, a_next, u_next

        with m.If(self.sink.valid):
            sync += [state.eq(s), after_com.eq(a), unscrambled.eq(u)]
        sync += [self.source.valid.eq(self.sink.valid), self.source.p.extra.eq(self.sink.p.extra)]
        return m
