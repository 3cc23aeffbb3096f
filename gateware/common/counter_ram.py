"""Telemetry words kept in block RAM, updated by a read-modify-write round over a fixed program.

Thirty-odd 32-bit counters in flip-flops cost a 32-bit adder and clear logic each, and a
multiplexer of every bit of every word in front of the host's read port (on ECP5 that was
1,400 LUT4 for the USB 2.0 device's 41 words). Here the words live in a block RAM. Each event
source keeps only a small *pending* count in flip-flops; :class:`CounterRam` walks a program of
operations, one per cycle, reading a word, combining it with its operation's small operand and
writing it back. The one 32-bit adder and the few small multiplexers are shared by every word.

Each word is therefore up to one round (as many cycles as operations) behind the events, which
is why the host never reads the live RAM: on ``capture`` the next round also writes every value
it computes into a second RAM, the snapshot, which the host reads at leisure and which no event
changes until the next capture. ``ready`` says the snapshot is whole.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from amaranth import C, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["Kind", "CounterOp", "CounterRam", "mux_tree"]


def mux_tree(values, index):
    """``values[index]`` as a balanced tree of 2:1 multiplexers on the bits of ``index``.

    Written out because a flat ``Array`` lookup becomes a priority multiplexer that maps to far
    more ECP5 LUTs than the tree, which packs into LUT4 + PFUMX + L6MUX21. Leaves past the end
    of ``values`` are never selected; equal leaves (the constant zeros of operations without an
    operand) collapse, so a sparse list costs little.
    """
    level = list(values)
    bit = 0
    while len(level) > 1:
        pairs = [level[i:i + 2] for i in range(0, len(level), 2)]
        level = [pair[0] if len(pair) == 1 or _same(pair[0], pair[1])
                 else Mux(index[bit], pair[1], pair[0]) for pair in pairs]
        bit += 1
    return level[0]


def _same(a, b):
    return (isinstance(a, Const) and isinstance(b, Const) and a.value == b.value
            and a.shape() == b.shape()) or a is b


class Kind(enum.IntEnum):
    """What an operation writes back, from the word it read (``base``: 0 in a clearing round).

    Every kind is one addition, ``x + y``, through the one 32-bit adder of the round.
    """

    #: ``base + operand`` (a counter taking its pending count; a copy of another word).
    ADD = 0
    #: ``base + operand`` if ``flag``, else ``base``, the operand signed (sign-extended from
    #: its width): a time stamp, its read redirected to the time base (:meth:`CounterRam.
    #: add_time_base`) while ``flag`` is set and the operand its age and distance from it.
    STAMP = 1
    #: ``value``, a signal kept elsewhere.
    INPUT = 2
    #: ``base + the round's length``, never cleared: the time base (:meth:`CounterRam.
    #: add_time_base`).
    TIME = 3


@dataclass
class CounterOp:
    """One operation of the round.

    Attributes
    ----------
    word: int
        RAM word written (and, in a capture round, snapshot word written if ``snapshot``).
    kind: Kind
    read_word: int
        RAM word read (``word`` unless the operation copies another word).
    redirects: tuple of (Value, int)
        ``(condition, word)`` pairs, the first whose condition is true naming the word read
        instead of ``read_word``. Kept apart so that the engine's address path stays a table
        of constants indexed by the operation, plus one multiplexer per alternative.
    operand: Value
        Small operand, sampled in the cycle the write happens (unsigned, but for STAMP).
    gate: Value or int
        The operand counts only while this is true (0 otherwise): one AND after the engine's
        operand multiplexer, shared by every operation, rather than a gate in each leaf.
    flag: Value
        STAMP only: a stamp is pending.
    value: Value
        INPUT only.
    snapshot: bool
        Whether the host sees the word (hidden words hold state between rounds).
    taken: Signal
        Strobe from the engine: the write happens in this cycle, with the operand sampled now
        (a pending count must restart from what arrives in this cycle).
    """

    word: int
    kind: Kind
    read_word: int | None = None
    redirects: tuple[tuple[Value, int], ...] = ()
    operand: Value | int = 0
    gate: Value | int = 1
    flag: Value | int = 0
    value: Value | int = 0
    snapshot: bool = True
    taken: Signal = field(default_factory=lambda: Signal())

    def __post_init__(self):
        if self.read_word is None:
            self.read_word = self.word


class CounterRam(wiring.Component):
    """Runs the round over ``ops`` (add them with :meth:`add` before elaboration).

    The pipeline has two stages: in cycle *t* operation *i* addresses the RAM; in *t + 1* the
    word is there, its new value is computed and written, and operation *i + 1* addresses the
    RAM. An operation must not read the word the operation before it writes (it would read the
    old value); :meth:`elaborate` checks the program for that.

    ``clear`` restarts the round at operation 0 as a clearing round (every ``base`` is 0 but the
    time base's), so an event after the strobe is counted from zero and none is lost; the
    caller zeroes its own pending counts with the strobe. ``capture`` marks the next
    ``len(ops)`` operations, whatever operation comes next, to write the snapshot too: it is
    whole ``len(ops)`` cycles later.

    Attributes
    ----------
    clear: Signal(), input
        Strobe: zero every word.
    capture: Signal(), input
        Strobe: take a snapshot.
    ready: Signal(), output
        The snapshot is whole (low from ``capture`` until the capture round has written).
    read_address: Signal(range(snapshot_words)), input
        Snapshot word to read; ``read_data`` has it a cycle later.
    read_data: Signal(32), output
    round_start: Signal(), output
        Strobe: operation 0 is addressed at the start of a round (not a clear's restart).

    Parameters
    ----------
    words: int
        Words in the counter RAM.
    snapshot_init: list of int
        Initial snapshot RAM (its length is its depth): words no operation writes keep these
        values (constants, answers to other requests).
    domain: str
    """

    def __init__(self, *, words, snapshot_init, domain="sync"):
        self._words = words
        self._snapshot_init = list(snapshot_init)
        self._domain = domain
        super().__init__({
            "clear": In(1),
            "capture": In(1),
            "ready": Out(1, init=1),
            "read_address": In(range(len(self._snapshot_init))),
            "read_data": Out(32),
            "round_start": Out(1),
        })
        self.ops: list[CounterOp] = []

    def add(self, word, kind, **kwargs):
        """Append an operation to the round; returns it (its ``taken`` strobe is for the caller)."""
        op = CounterOp(word=word, kind=kind, **kwargs)
        self.ops.append(op)
        return op

    def add_time_base(self, word):
        """Append the time base: a hidden word that advances by the round's length each round,
        so it reads as a cycle count (from an origin of its own) at its operation, and an
        operation ``d`` later in the round is ``d`` cycles after it. A time stamp reads it
        (a STAMP operation redirected to ``word``) instead of a 32-bit cycle counter
        multiplexed into the adder. A clear leaves it alone, but cuts the round short: its
        origin moves then, by less than a round, so stamps compare within a clear only.
        Returns the operation (its index in :attr:`ops` is its slot)."""
        return self.add(word, Kind.TIME, snapshot=False)

    def _check_program(self):
        ops = self.ops
        if not ops:
            raise ValueError("CounterRam has no operations")
        for op in ops:
            if not 0 <= op.word < self._words:
                raise ValueError(f"operation writes word {op.word} outside the RAM")
        for before, after in zip(ops, ops[1:] + ops[:1], strict=True):
            reads = {after.word, after.read_word} | {word for _, word in after.redirects}
            if before.word in reads:
                raise ValueError(f"word {before.word} is written and then read at once")

    def elaborate(self, platform):
        self._check_program()
        m = Module()
        sync = m.d[self._domain]
        ops, count = self.ops, len(self.ops)

        m.submodules.counters = counters = Memory(shape=32, depth=self._words, init=[],
                                                  attrs={"ram_style": "block"})
        m.submodules.snapshot = snapshot = Memory(shape=32, depth=len(self._snapshot_init),
                                                  init=self._snapshot_init,
                                                  attrs={"ram_style": "block"})
        read = counters.read_port(domain=self._domain)
        write = counters.write_port(domain=self._domain)
        snap_write = snapshot.write_port(domain=self._domain)
        snap_read = snapshot.read_port(domain=self._domain)
        m.d.comb += [snap_read.addr.eq(self.read_address), self.read_data.eq(snap_read.data)]
        for op in ops:
            if op.kind == Kind.TIME:
                op.operand = C(count, (count).bit_length())

        # -- stage A: address ------------------------------------------------------------------
        slot = Signal(range(count))
        clearing = Signal()
        capture_left = Signal(range(count + 1))   # operations still to be marked for capture
        m.d.comb += [read.addr.eq(self._read_address(slot)),
                     self.round_start.eq((slot == 0) & ~clearing & ~self.clear)]
        with m.If(self.clear):
            sync += [slot.eq(0), clearing.eq(1)]
        with m.Elif(slot == count - 1):
            sync += [slot.eq(0), clearing.eq(0)]
        with m.Else():
            sync += slot.eq(slot + 1)
        with m.If(self.capture | (self.clear & (capture_left != 0))):
            sync += [capture_left.eq(count), self.ready.eq(0)]
        with m.Elif(capture_left != 0):
            sync += capture_left.eq(capture_left - 1)

        # -- stage B: modify and write ----------------------------------------------------------
        # The operation in this stage as a binary index (for the multiplexers) and one-hot (its
        # `taken` strobe, a flip-flop rather than a comparator per operation).
        slot_b = Signal(range(count))
        taken = Signal(count)
        valid_b = Signal()
        capture_b = Signal()
        keeps = mux_tree([C(op.kind == Kind.TIME, 1) for op in ops], slot) | (
            mux_tree([C(op.kind == Kind.STAMP, 1) for op in ops], slot) & self._redirected(slot))
        zero_base_b = Signal()
        sync += zero_base_b.eq(clearing & ~keeps)
        sync += [slot_b.eq(slot), valid_b.eq(~self.clear),
                 taken.eq(Mux(self.clear, 0, 1 << slot)),
                 capture_b.eq((capture_left != 0) & ~self.capture & ~self.clear)]
        with m.If(capture_b & (capture_left == 0) & ~self.capture):
            sync += self.ready.eq(1)

        kind = mux_tree([C(op.kind, 2) for op in ops], slot_b)
        gate = mux_tree([_value(op.gate, 1) for op in ops], slot_b)
        operand = Mux(gate, mux_tree([_value(op.operand, 1) for op in ops], slot_b), 0)
        flag = mux_tree([_value(op.flag, 1) for op in ops], slot_b)
        # A clearing round zeroes every word but the time base, also as a stamp reads it:
        # decided in stage A from the operation and whether its read was redirected (a flip-flop,
        # so that the decision adds nothing in front of the adder).
        base = Mux(zero_base_b, 0, read.data)
        # INPUT words are few and wide: an AND-OR on the one-hot strobe, not a tree.
        input_value = 0
        for index, op in enumerate(ops):
            if op.kind == Kind.INPUT:
                input_value = input_value | Mux(taken[index], _value(op.value, 32), 0)
        stamps = [op for op in ops if op.kind == Kind.STAMP]
        age_width = max((len(_value(op.operand, 1)) for op in stamps), default=1)
        negative_age = operand[:age_width].as_signed()
        x = Mux(kind == Kind.INPUT, input_value, base)
        y = Mux(kind == Kind.INPUT, 0,
                Mux(kind == Kind.STAMP, Mux(flag, negative_age, 0), operand))
        value = Signal(32)
        m.d.comb += value.eq(x + y)
        word = mux_tree([C(op.word, 8) for op in ops], slot_b)
        shown = mux_tree([C(op.snapshot, 1) for op in ops], slot_b)
        m.d.comb += [
            write.addr.eq(word), write.data.eq(value), write.en.eq(valid_b),
            snap_write.addr.eq(word), snap_write.data.eq(value),
            snap_write.en.eq(valid_b & capture_b & shown),
        ]
        for index, op in enumerate(ops):
            m.d.comb += op.taken.eq(taken[index])
        return m

    def _redirected(self, slot):
        """Whether operation ``slot`` reads another word than its own now (a redirect holds)."""
        alternatives = max(len(op.redirects) for op in self.ops)
        held = C(0, 1)
        for index in range(alternatives):
            held = held | mux_tree([op.redirects[index][0] if index < len(op.redirects)
                                    else C(0, 1) for op in self.ops], slot)
        return held

    def _read_address(self, slot):
        """The word operation ``slot`` reads: its own, or the first redirect whose condition
        holds (one constant table per alternative; an operation without one repeats its
        neighbour's entry, so equal leaves collapse)."""
        ops = self.ops
        address = mux_tree([C(op.read_word, 8) for op in ops], slot)
        alternatives = max(len(op.redirects) for op in ops)
        for index in reversed(range(alternatives)):
            words, conditions, previous = [], [], ops[0].read_word
            for op in ops:
                if index < len(op.redirects):
                    condition, previous = op.redirects[index]
                    conditions.append(condition)
                else:
                    conditions.append(C(0, 1))
                words.append(C(previous, 8))
            address = Mux(mux_tree(conditions, slot), mux_tree(words, slot), address)
        return address


def _value(value, width):
    return C(value, width) if isinstance(value, int) else value
