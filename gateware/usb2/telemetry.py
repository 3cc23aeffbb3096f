"""Telemetry of the USB 2.0 device (``usb2.TELEMETRY``), kept in block RAM.

The words are updated by a :class:`~busprobe.gateware.common.counter_ram.CounterRam` round;
this module is the round's program: which events feed which word, through which small pending
count, and how the timing-window words are taken at a SOF.
"""

from types import SimpleNamespace

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb2

from ..common.counter_ram import CounterRam, Kind
from .control_replies import ControlReplies
from .traffic import EndpointTrafficSignature, RxDropsSignature, telemetry_inputs

__all__ = ["Usb2Telemetry"]

WORD = {name: index for index, (name, _) in enumerate(usb2.TELEMETRY)}
#: Counter RAM words the host never sees: the newest SOF that ended a data microframe, per
#: direction (the window's end moves there at the next one), and the time base the time stamps
#: read (:meth:`~busprobe.gateware.common.counter_ram.CounterRam.add_time_base`).
HIDDEN = {name: usb2.TELEMETRY_WORDS + index for index, name in enumerate(
    ("in_window_last_bytes", "in_window_last_uframe",
     "out_window_last_bytes", "out_window_last_uframe", "time_base"))}

# Pending counts must not wrap between two visits of their operation: a round apart for
# event counters, up to three for the counters a SOF holds back (bytes, SOFs). An event needs
# at least a 3-cycle packet on the wire (60 MHz ULPI, 8 bits a cycle: SYNC alone is 4 bytes at
# high speed; 3 covers a hostile bus's runts); bytes come at most one a cycle plus a whole
# 512-byte packet at once. The widths follow from the round's length (see _PendingWidths).
MIN_EVENT_CYCLES = 3
#: The per-microframe token count saturates here (a microframe is 7,500 cycles, a token 8).
TOKEN_COUNT_BITS = 10


class _PendingWidths:
    """Widths of the pending counts for a round of ``cycles`` operations.

    Attributes
    ----------
    event: int
        Events of one round.
    sofs, bytes: int
        SOFs and bytes of three rounds (the counters a SOF holds back).
    age: int
        A time stamp's negative age, signed: it is taken within one round.
    """

    def __init__(self, cycles):
        self.event = (cycles // MIN_EVENT_CYCLES + 1).bit_length()
        self.sofs = (3 * cycles // MIN_EVENT_CYCLES + 1).bit_length()
        self.bytes = (3 * cycles + usb2.MAX_PACKET_SIZE).bit_length()
        self.age = (cycles + 2).bit_length() + 1


class Usb2Telemetry(wiring.Component):
    """Counts what the host did to the device, and keeps a snapshot for the host to read.

    Every word is 32 bits and wraps; the layout is :data:`busprobe.protocol.usb2.TELEMETRY`,
    and elaboration fails if the program leaves out a word ``features`` asks for (the words of
    a group left out, :data:`~busprobe.protocol.usb2.FEATURE_WORDS`, read 0). ``capture``
    starts a snapshot that is whole a round later (up to 42 cycles, 0.7 µs; up to two more if
    a SOF is being applied); ``ready`` says so. The snapshot RAM also holds the control
    endpoint's constant answers (:class:`~.control_replies.ControlReplies`: GET_INFO,
    GET_INTERFACE, the descriptors), so one read port feeds every data stage of EP0.

    The timing window (``*_window_*``) is taken at a SOF that ends a microframe with data. A
    SOF less than a round after the one before (never on a real bus: they are 7,500 cycles
    apart) is counted but does not move the window; the next one does.

    Attributes
    ----------
    clear: Signal(), input
        Strobe: zero every counter (CLEAR_TELEMETRY); events in its cycle are not counted.
    sof: Signal(), input
        Strobe: a start-of-frame packet arrived (starts a new microframe).
    ep_in: EndpointTrafficSignature, input
        Traffic of the IN endpoint.
    ep_out: EndpointTrafficSignature, input
        Traffic of the OUT endpoint.
    ping: Signal(), input
        Strobe: PING addressed to the OUT endpoint.
    nyet: Signal(), input
        Strobe: the OUT endpoint answered NYET.
    rx: RxDropsSignature, input
        Every packet received, and the class of each one dropped.
    out_duplicate: Signal(), input
        Strobe: an OUT data packet repeated the previous toggle (ACKed and dropped).
    pattern_errors: Signal(32), input
        From the OUT pattern checker.
    first_error_offset: Signal(32), input
        From the OUT pattern checker.
    capture: Signal(), input
        Strobe: snapshot the telemetry (GET_TELEMETRY's SETUP).
    ready: Signal(), output
        The snapshot is whole.
    read_address: Signal(range(replies.depth)), input
        Snapshot word to read; ``read_data`` has it a cycle later.
    read_data: Signal(32), output

    Parameters
    ----------
    features: usb2.Feature
        Optional counter groups to count (:attr:`~usb2.Feature.PACKET_SHAPES`,
        :attr:`~usb2.Feature.RX_DROPS`).
    replies: ControlReplies
        The constant answers the snapshot RAM holds after the telemetry block (default: those
        of ``features`` and the busprobe descriptors).
    """

    def __init__(self, *, features=usb2.NO_FEATURES, replies=None):
        self._features = usb2.Feature(features)
        self._replies = replies if replies is not None else ControlReplies(features=features)
        super().__init__({**telemetry_inputs(), "capture": In(1), "ready": Out(1),
                          "read_address": In(range(self._replies.depth)), "read_data": Out(32)})

    def elaborate(self, platform):
        m = Module()
        snapshot_init = ([usb2.MAGIC, usb2.PROTOCOL_VERSION] + [0] * (usb2.TELEMETRY_WORDS - 2)
                         + self._replies.words)
        m.submodules.ram = ram = CounterRam(words=usb2.TELEMETRY_WORDS + len(HIDDEN),
                                            snapshot_init=snapshot_init, domain="usb")
        # One operation per word written: every word the features count, and the hidden ones.
        self._present = set(usb2.present_words(self._features))
        expected = ({WORD[name] for name in self._present}
                    - {WORD["magic"], WORD["version"]} | set(HIDDEN.values()))
        self._width = _PendingWidths(len(expected))
        # Every event is registered on its way in: they come combinationally from LUNA's
        # handshake detector and endpoints, and the paths from there into the pending counts
        # were, in turn, the ECP5 critical path. Counting a cycle late changes nothing but the
        # time stamps, whose age starts one cycle older.
        self._ev = _registered_events(m, self)
        m.d.comb += [
            ram.clear.eq(self._ev.clear),
            ram.read_address.eq(self.read_address),
            self.read_data.eq(ram.read_data),
        ]
        # Operation 0 must not depend on the round's SOF flag: it is addressed in the cycle that
        # flag changes. The checker's registers go first.
        ram.add(WORD["pattern_errors"], Kind.INPUT, value=self.pattern_errors)
        ram.add(WORD["first_error_offset"], Kind.INPUT, value=self.first_error_offset)
        # Early in the round, so every time stamp comes after it (at least two operations
        # later: the one right after it could not read it yet).
        self._time_base = len(ram.ops)
        ram.add_time_base(HIDDEN["time_base"])
        sof_round, sof_pending = self._sof_rounds(m, ram)
        self._capture(m, ram, sof_round, sof_pending)
        latched = self._windows(m, ram, sof_round, sof_pending)
        self._counters(m, ram, latched, sof_round, sof_pending)
        for direction, ep in (("in", self._ev.ep_in), ("out", self._ev.ep_out)):
            self._max_per_uframe(m, ram, direction, ep.token)
            self._stamp(m, ram, f"{direction}_first_cycle", ep.packet_start, first_only=True)
            self._stamp(m, ram, f"{direction}_last_cycle", ep.acked, first_only=False)

        written = [op.word for op in ram.ops]
        if sorted(written) != sorted(expected):
            missing = {name for name, word in (WORD | HIDDEN).items()
                       if word in expected and word not in written}
            raise ValueError(f"telemetry program leaves out or repeats words (missing: "
                             f"{sorted(missing - {'magic', 'version'})})")
        return m

    def _sof_rounds(self, m, ram):
        """Which SOF moves the window, and which round applies it.

        A SOF is *accepted* when no earlier one is still waiting for its round and no snapshot
        is being taken; the round that starts next is a *SOF round*, in which the window
        operations run and the counters the window copies (bytes, SOFs) add the counts held
        back at the SOF. Between an accepted SOF and the end of its round those counters' words
        lag by what was held back, so no snapshot is taken then.
        """
        self._sof_accept = accept = Signal()
        self._capturing = Signal()
        pending = Signal()          # accepted, its round not started yet
        sof_round = Signal()
        m.d.comb += accept.eq(self._ev.sof & ~pending & ~sof_round & ~self._capturing
                              & ~self._ev.clear)
        with m.If(self._ev.clear):
            m.d.usb += [pending.eq(0), sof_round.eq(0)]
        with m.Elif(ram.round_start):
            m.d.usb += [sof_round.eq(pending), pending.eq(accept)]
        with m.Elif(accept):
            m.d.usb += pending.eq(1)
        return sof_round, pending

    def _capture(self, m, ram, sof_round, sof_pending):
        """Start the engine's snapshot once no SOF is between acceptance and its round."""
        wanted = Signal()
        start = wanted & ~sof_pending & ~sof_round & ~self._sof_accept
        m.d.comb += [ram.capture.eq(start), self._capturing.eq(wanted | ~ram.ready)]
        # Registered: the request handler NAKs on it, in front of LUNA's handshake generator
        # (it was the ECP5 critical path). It falls with `wanted`, as it did combinationally,
        # and rises a cycle after the snapshot is whole.
        m.d.usb += self.ready.eq(ram.ready & ~wanted & ~self.capture)
        with m.If(self.capture):
            m.d.usb += wanted.eq(1)
        with m.Elif(start):
            m.d.usb += wanted.eq(0)

    def _latched_counter(self, name, increment, width):
        """A pending count that the SOF splits: what came before it is ``held`` for the SOF's
        round, what comes after keeps counting (and waits until that round is done); its
        operation and updates are made by :meth:`_counters`."""
        return (Signal(width, name=f"{name}_pending"), Signal(width, name=f"{name}_at_sof"),
                increment)

    def _windows(self, m, ram, sof_round, sof_pending):
        """The whole-microframe timing window of each direction (see ``usb2.TELEMETRY``).

        At each SOF that ends a microframe with data the window's end moves to the previous
        such SOF (the newest is kept in a hidden word): the last data microframe, partly idle,
        never enters it. The first such SOF starts the window and ends it at once.
        """
        latched = {
            f"{direction}_bytes": self._latched_counter(
                f"{direction}_bytes", Mux(ep.acked, ep.acked_length, 0), self._width.bytes)
            for direction, ep in (("in", self._ev.ep_in), ("out", self._ev.ep_out))}
        latched["sofs"] = self._latched_counter("sofs", self._ev.sof, self._width.sofs)
        held_sofs = latched["sofs"][1]

        for direction, ep in (("in", self._ev.ep_in), ("out", self._ev.ep_out)):
            active = Signal(name=f"{direction}_moved_this_uframe")
            started = Signal(name=f"{direction}_window_started")
            moves = Signal(name=f"{direction}_window_moves")    # at the accepted SOF
            first = Signal(name=f"{direction}_window_first")
            with m.If(self._ev.clear):
                m.d.usb += [active.eq(0), started.eq(0), moves.eq(0), first.eq(0)]
            with m.Elif(self._sof_accept):
                m.d.usb += [active.eq(ep.acked), moves.eq(active), first.eq(active & ~started),
                            started.eq(started | active)]
            with m.Elif(ep.acked):
                m.d.usb += active.eq(1)

            on = sof_round & moves
            held_bytes = latched[f"{direction}_bytes"][1]
            word_bytes, word_sofs = WORD[f"{direction}_bytes"], WORD["sofs"]
            last_bytes = HIDDEN[f"{direction}_window_last_bytes"]
            last_uframe = HIDDEN[f"{direction}_window_last_uframe"]
            name = f"{direction}_window_"
            # The end: the previous data SOF (or this one, the first); then the start, on the
            # first; then this SOF becomes the newest. Each copy reads the word before the SOF's
            # round adds the held-back count to it, and adds that count itself.
            for target, source_first, source, held in (
                    ("end_bytes", word_bytes, last_bytes, held_bytes),
                    ("end_uframe", word_sofs, last_uframe, held_sofs)):
                ram.add(WORD[name + target], Kind.ADD,
                        redirects=((on & first, source_first), (on, source)),
                        operand=held, gate=on & first)
            for target, source, held in (("start_bytes", word_bytes, held_bytes),
                                         ("start_uframe", word_sofs, held_sofs)):
                ram.add(WORD[name + target], Kind.ADD, redirects=((on & first, source),),
                        operand=held, gate=on & first)
            for target, source, held in ((last_bytes, word_bytes, held_bytes),
                                         (last_uframe, word_sofs, held_sofs)):
                ram.add(target, Kind.ADD, redirects=((on, source),), operand=held, gate=on,
                        snapshot=False)
        return latched

    def _counters(self, m, ram, latched, sof_round, sof_pending):
        # The window's sources: between an accepted SOF and the end of its round they add only
        # what the SOF held back, so the window copies read them as they were at the SOF. The
        # operand leaves the acceptance itself out (it is combinational, and was the ECP5
        # critical path into the adder): a count written in the SOF's own cycle is in the word
        # already, and the SOF holds back nothing of it.
        waiting = sof_pending
        for name, (count, held, increment) in latched.items():
            op = ram.add(WORD[name], Kind.ADD,
                         operand=Mux(waiting, 0, count) + Mux(sof_round, held, 0))
            with m.If(self._ev.clear):
                m.d.usb += [count.eq(0), held.eq(0)]
            with m.Elif(self._sof_accept):
                m.d.usb += [held.eq(Mux(op.taken, 0, count)), count.eq(increment)]
            with m.Elif(op.taken & ~waiting):
                m.d.usb += count.eq(increment)
            with m.Else():
                m.d.usb += count.eq(count + increment)

        events = {
            "pings": self._ev.ping,
            "out_nyets": self._ev.nyet,
            "rx_packets": self._ev.rx.packet,
            "rx_bad_pids": self._ev.rx.bad_pid,
            "rx_malformed": self._ev.rx.malformed,
            "rx_crc_errors": self._ev.rx.crc_error,
            "rx_foreign": self._ev.rx.foreign,
            "out_duplicates": self._ev.out_duplicate,
            "data_uframes": self._new_data_uframe(m),
        }
        for direction, ep in (("in", self._ev.ep_in), ("out", self._ev.ep_out)):
            length = ep.acked_length
            events |= {
                f"{direction}_packets": ep.acked & (length != 0),
                f"{direction}_short": ep.acked & (length != 0) & (length != usb2.MAX_PACKET_SIZE),
                f"{direction}_zlps": ep.acked & (length == 0),
                f"{direction}_naks": ep.nak,
                f"{direction}_tokens": ep.token,
            }
        events = {name: event for name, event in events.items() if name in self._present}
        for name, event in events.items():
            count = Signal(self._width.event, name=f"{name}_pending")
            op = ram.add(WORD[name], Kind.ADD, operand=count)
            with m.If(self._ev.clear):
                m.d.usb += count.eq(0)
            with m.Else():
                m.d.usb += count.eq(Mux(op.taken, 0, count) + event)

    def _new_data_uframe(self, m):
        """Strobe: the first data packet (either direction) of a microframe."""
        moved = self._ev.ep_in.acked | self._ev.ep_out.acked
        moved_this_uframe = Signal()
        with m.If(self._ev.clear):
            m.d.usb += moved_this_uframe.eq(0)
        with m.Elif(self._ev.sof):
            m.d.usb += moved_this_uframe.eq(moved)
        with m.Elif(moved):
            m.d.usb += moved_this_uframe.eq(1)
        return moved & (self._ev.sof | ~moved_this_uframe)

    def _max_per_uframe(self, m, ram, direction, token):
        """Most tokens in one microframe; the microframe in progress counts too.

        Kept in flip-flops (10 bits: a microframe has room for fewer than 1,024 tokens) and
        copied into the RAM word; a maximum is not a sum of pending counts."""
        current = Signal(TOKEN_COUNT_BITS, name=f"{direction}_tokens_this_uframe")
        most = Signal(TOKEN_COUNT_BITS, name=f"{direction}_tokens_max")
        live = Mux(current > most, current, most)
        ram.add(WORD[f"{direction}_tokens_max_uframe"], Kind.INPUT, value=live)
        with m.If(self._ev.clear):
            m.d.usb += [current.eq(0), most.eq(0)]
        with m.Elif(self._ev.sof):
            m.d.usb += [current.eq(0), most.eq(live)]
        with m.Elif(token & (current != 2 ** TOKEN_COUNT_BITS - 1)):
            m.d.usb += current.eq(current + 1)

    def _stamp(self, m, ram, name, event, *, first_only):
        """The cycle at ``event`` (its first since the clear, or its last).

        While a stamp is pending its operation reads the time base instead of its own word and
        adds the event's negative age and its distance from the time base in the round (the
        time base reads as the cycle count of its own operation); the age fits its signed
        width because the operation comes round within ``2 ** (age - 1)`` cycles
        (:class:`_PendingWidths`). The read is redirected from the cycle of the event on,
        the cycle the write checks ``pending`` in is the next, so the two agree."""
        pending = Signal(name=f"{name}_pending")
        negative_age = Signal(self._width.age, name=f"{name}_negative_age")
        seen = Signal(name=f"{name}_seen")
        stamp = event & ~seen if first_only else event
        distance = len(ram.ops) - self._time_base
        if distance < 2:
            raise ValueError(f"{name}: a time stamp right after the time base cannot read it")
        op = ram.add(WORD[name], Kind.STAMP, operand=negative_age, flag=pending,
                     redirects=((pending | stamp, HIDDEN["time_base"]),))
        with m.If(self._ev.clear):
            m.d.usb += [pending.eq(0), seen.eq(0)]
        with m.Elif(stamp):
            # The event happened a cycle before it is seen here (registered inputs), and the
            # word is written a cycle later still: the age starts at 2.
            m.d.usb += [pending.eq(1), negative_age.eq(distance - 2), seen.eq(1)]
        with m.Else():
            m.d.usb += negative_age.eq(negative_age - 1)
            with m.If(op.taken):
                m.d.usb += pending.eq(0)


def _registered_events(m, telemetry):
    """The event inputs of ``telemetry``, each delayed by a flip-flop (a namespace shaped like
    the component: ``clear``, ``sof``, ``ep_in.acked``, ``rx.packet``...)."""
    def delayed(signal):
        copy = Signal.like(signal, name=f"{signal.name}_registered")
        m.d.usb += copy.eq(signal)
        return copy

    def group(interface, signature):
        return SimpleNamespace(**{name: delayed(getattr(interface, name))
                                  for name in signature.members})

    return SimpleNamespace(
        clear=delayed(telemetry.clear), sof=delayed(telemetry.sof),
        ping=delayed(telemetry.ping), nyet=delayed(telemetry.nyet),
        out_duplicate=delayed(telemetry.out_duplicate),
        ep_in=group(telemetry.ep_in, EndpointTrafficSignature()),
        ep_out=group(telemetry.ep_out, EndpointTrafficSignature()),
        rx=group(telemetry.rx, RxDropsSignature()))
