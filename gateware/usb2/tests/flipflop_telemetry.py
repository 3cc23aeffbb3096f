"""The flip-flop telemetry that :class:`~busprobe.gateware.usb2.telemetry.Usb2Telemetry`
replaced (every word a 32-bit register, live), kept as the reference model its tests compare
the block-RAM design with: same inputs, the words the protocol defines, no lag."""

from amaranth import C, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out
from busprobe.gateware.usb2.traffic import telemetry_inputs
from busprobe.protocol import usb2

__all__ = ["FlipFlopTelemetry"]


class _Counter:
    """A 32-bit wrapping counter cleared by the telemetry's ``clear``."""

    def __init__(self, m, clear, name):
        self.value = Signal(32, name=name)
        self._m, self._clear = m, clear

    def add(self, condition, amount=1):
        with self._m.If(self._clear):
            self._m.d.usb += self.value.eq(0)
        with self._m.Elif(condition):
            self._m.d.usb += self.value.eq(self.value + amount)
        return self.value


class FlipFlopTelemetry(wiring.Component):
    """Counts what the host did to the device and packs it in protocol order, live.

    Attributes
    ----------
    clear, sof, ep_in, ep_out, ping, nyet, rx, out_duplicate, pattern_errors, first_error_offset
        Inputs, as :class:`~busprobe.gateware.usb2.telemetry.Usb2Telemetry` has them.
    cycle: Signal(32), output
        Free-running 60 MHz cycle counter (not cleared).
    words: ArrayLayout(32, TELEMETRY_WORDS), output
        The telemetry block, every word a register.
    """

    def __init__(self):
        super().__init__({**telemetry_inputs(), "cycle": Out(32),
                          "words": Out(data.ArrayLayout(32, usb2.TELEMETRY_WORDS))})

    def elaborate(self, platform):
        m = Module()
        m.d.usb += self.cycle.eq(self.cycle + 1)

        def counter(name, condition, amount=1):
            return _Counter(m, self.clear, name).add(condition, amount)

        values = {
            "magic": C(usb2.MAGIC, 32),
            "version": C(usb2.PROTOCOL_VERSION, 32),
            "pings": counter("pings", self.ping),
            "sofs": counter("sofs", self.sof),
            "out_nyets": counter("out_nyets", self.nyet),
            "data_uframes": self._data_uframes(m),
            "rx_packets": counter("rx_packets", self.rx.packet),
            "rx_bad_pids": counter("rx_bad_pids", self.rx.bad_pid),
            "rx_malformed": counter("rx_malformed", self.rx.malformed),
            "rx_crc_errors": counter("rx_crc_errors", self.rx.crc_error),
            "rx_foreign": counter("rx_foreign", self.rx.foreign),
            "out_duplicates": counter("out_duplicates", self.out_duplicate),
            "pattern_errors": self.pattern_errors,
            "first_error_offset": self.first_error_offset,
        }
        for direction, ep in (("in", self.ep_in), ("out", self.ep_out)):
            length = ep.acked_length
            moved = counter(f"{direction}_bytes", ep.acked, length)
            values |= self._window(m, direction, ep.acked, moved, values["sofs"])
            values |= {
                f"{direction}_bytes": moved,
                f"{direction}_packets": counter(f"{direction}_packets", ep.acked & (length != 0)),
                f"{direction}_short": counter(
                    f"{direction}_short",
                    ep.acked & (length != 0) & (length != usb2.MAX_PACKET_SIZE)),
                f"{direction}_zlps": counter(f"{direction}_zlps", ep.acked & (length == 0)),
                f"{direction}_naks": counter(f"{direction}_naks", ep.nak),
                f"{direction}_tokens": counter(f"{direction}_tokens", ep.token),
                f"{direction}_tokens_max_uframe": self._max_per_uframe(m, direction, ep.token),
                f"{direction}_first_cycle": self._first_cycle(m, direction, ep.packet_start),
                f"{direction}_last_cycle": self._last_cycle(m, direction, ep.acked),
            }

        names = [name for name, _ in usb2.TELEMETRY]
        if set(names) != set(values):
            raise ValueError(f"gateware telemetry {sorted(values)} does not match the protocol's "
                             f"{sorted(names)}")
        for index, name in enumerate(names):
            m.d.comb += self.words[index].eq(values[name])
        return m

    def _max_per_uframe(self, m, direction, token):
        current = Signal(32, name=f"{direction}_tokens_this_uframe")
        most = Signal(32, name=f"{direction}_tokens_max")
        with m.If(self.clear):
            m.d.usb += [current.eq(0), most.eq(0)]
        with m.Elif(self.sof):
            m.d.usb += current.eq(0)
            with m.If(current > most):
                m.d.usb += most.eq(current)
        with m.Elif(token):
            m.d.usb += current.eq(current + 1)
        # Live value: the microframe in progress counts too.
        return Mux(current > most, current, most)

    def _data_uframes(self, m):
        moved = self.ep_in.acked | self.ep_out.acked
        moved_this_uframe = Signal()
        count = Signal(32, name="data_uframes_ended")
        with m.If(self.clear):
            m.d.usb += [count.eq(0), moved_this_uframe.eq(0)]
        with m.Elif(self.sof):
            m.d.usb += [count.eq(count + moved_this_uframe), moved_this_uframe.eq(moved)]
        with m.Elif(moved):
            m.d.usb += moved_this_uframe.eq(1)
        return count + moved_this_uframe

    def _window(self, m, direction, acked, moved, sofs):
        """The whole-microframe timing window of one direction (see ``usb2.TELEMETRY``).

        At each SOF that ends a microframe with data, the window's end moves to the previous
        such SOF: the last data microframe, partly idle, never enters it. It needs hindsight,
        so the newest such SOF is kept aside in ``last_*``.
        """
        active = Signal(name=f"{direction}_moved_this_uframe")
        started = Signal(name=f"{direction}_window_started")
        words = {}
        for name in ("start_bytes", "start_uframe", "end_bytes", "end_uframe"):
            words[name] = Signal(32, name=f"{direction}_window_{name}")
        last_bytes = Signal(32, name=f"{direction}_window_last_bytes")
        last_uframe = Signal(32, name=f"{direction}_window_last_uframe")
        with m.If(self.clear):
            m.d.usb += [signal.eq(0) for signal in (active, started, last_bytes, last_uframe,
                                                    *words.values())]
        with m.Elif(self.sof):
            m.d.usb += active.eq(0)
            with m.If(active & ~started):
                m.d.usb += [started.eq(1),
                            words["start_bytes"].eq(moved), words["start_uframe"].eq(sofs),
                            words["end_bytes"].eq(moved), words["end_uframe"].eq(sofs)]
            with m.Elif(active):
                m.d.usb += [words["end_bytes"].eq(last_bytes),
                            words["end_uframe"].eq(last_uframe)]
            with m.If(active):
                m.d.usb += [last_bytes.eq(moved), last_uframe.eq(sofs)]
        with m.Elif(acked):
            m.d.usb += active.eq(1)
        return {f"{direction}_window_{name}": word for name, word in words.items()}

    def _first_cycle(self, m, direction, start):
        seen = Signal(name=f"{direction}_started")
        first = Signal(32, name=f"{direction}_first_cycle")
        with m.If(self.clear):
            m.d.usb += [seen.eq(0), first.eq(0)]
        with m.Elif(start & ~seen):
            m.d.usb += [seen.eq(1), first.eq(self.cycle)]
        return first

    def _last_cycle(self, m, direction, acked):
        last = Signal(32, name=f"{direction}_last_cycle")
        with m.If(self.clear):
            m.d.usb += last.eq(0)
        with m.Elif(acked):
            m.d.usb += last.eq(self.cycle)
        return last
