"""Several sources of whole TLPs onto the one stream the data link layer takes."""

from amaranth import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .word_framer import TLP_BYTE

__all__ = ["TlpMerge"]


class TlpMerge(wiring.Component):
    """Passes one TLP at a time from ``sinks``, whole: the lowest-numbered source with a TLP
    waiting is chosen between TLPs and keeps the output until its ``last`` unit, so a TLP is
    never interleaved with another and stays valid from first unit to last as its source
    keeps it (what ``SoftDataLink.tlp`` requires).

    Fixed priority, not round robin: the sources here (configuration space, the router's UR
    completions, the application) are each bounded by the requests that cause them, so none
    can starve the others for long; the first has the completions a root port waits for.

    Attributes
    ----------
    sinks: n streams of ``unit``, input
    source: stream of ``unit``, output

    Parameters
    ----------
    count: int
        How many sources.
    unit: StructLayout
        What TLPs move in: :data:`~.word_framer.TLP_BYTE` (the default) or
        :data:`~.word_framer.TLP_DW` (the link's); any layout with ``last`` is passed as it is.
    """

    def __init__(self, count: int, *, unit: data.StructLayout = TLP_BYTE):
        self._count = count
        super().__init__({
            **{f"sink_{i}": In(stream.Signature(unit)) for i in range(count)},
            "source": Out(stream.Signature(unit)),
        })

    @property
    def sinks(self) -> list:
        return [getattr(self, f"sink_{i}") for i in range(self._count)]

    def elaborate(self, platform):
        m = Module()
        sinks = self.sinks
        busy = Signal()
        chosen = Signal(range(max(self._count, 2)))
        current = Signal(range(max(self._count, 2)))
        # Between TLPs the lowest-numbered waiting source; during one, the one sending.
        with m.If(busy):
            m.d.comb += chosen.eq(current)
        with m.Else():
            for i in reversed(range(self._count)):
                with m.If(sinks[i].valid):
                    m.d.comb += chosen.eq(i)
        for i, sink in enumerate(sinks):
            with m.If(chosen == i):
                m.d.comb += [self.source.valid.eq(sink.valid),
                             self.source.payload.eq(sink.payload),
                             sink.ready.eq(self.source.ready)]
        with m.If(self.source.valid & self.source.ready):
            m.d.sync += [busy.eq(~self.source.payload.last), current.eq(chosen)]
        return m
