"""The bulk IN endpoint's packet reader: a packet's words from the ring to LUNA, the next one
staged while the window is shut."""

from amaranth import Cat, Mux, Signal

__all__ = ["RingPacketReader"]


class RingPacketReader:
    """Reads the packet at ``start`` (``length`` bytes, any byte alignment) out of
    :class:`.in_endpoint.BurstInEndpoint`'s ring a word a cycle into ``tx``, or asks LUNA for a
    zero-length packet; added to the endpoint's module.

    ``IDLE`` → ``START`` (the ring's read address) → ``PRIME`` (the first word) → ``SEND``. While
    the window is shut the next new packet is *staged*: ``START`` and ``PRIME`` run ahead with
    ``staged`` set and wait in ``READY``, the read port holding the second word (its enable
    low), so a packet starting from there reaches LUNA two cycles sooner (the ACK TP that opens
    the window answered 4 cycles after its decode, not 6; docs/DESIGN.md §3.6). The endpoint
    keeps what is staged valid: ``stageable`` falls when it would change, and the reader goes
    back to ``IDLE``.

    Attributes
    ----------
    starting: Signal(), output
        A packet starts this cycle (from ``IDLE`` or ``READY``): the endpoint loads its header
        registers and records it.
    staging: Signal(), output
        The next packet is staged from this cycle: the endpoint loads its header registers.
    at_rest: Value
        In ``IDLE`` or ``READY``: a packet may start.
    busy: Value
        A packet is on its way (not at rest, not being staged).
    in_send: Value
        Words go to LUNA this cycle (``tx.valid`` is nonzero exactly here).
    done: Signal(), output
        The packet's last word (or its zero-length packet) went to LUNA.

    Parameters
    ----------
    m: Module
    read: the ring's read port (``amaranth.lib.memory``), whose address and enable it drives.
    tx: the skid buffer's sink (``valid``, ``first``, ``last``, ``data``; ``ready`` read).
    zlp: Signal
        LUNA's ``tx_zlp``.
    start, length: Value
        The header registers: the packet's first byte in the ring, its bytes.
    word_bits: int
        Bits of a ring word address.
    go, stageable, may_stage: Value
        A packet starts now (``go``); the next new packet may be, and may stay, staged.
    """

    def __init__(self, m, *, read, tx, zlp, start, length, word_bits, go, stageable,
                 may_stage):
        self.starting, self.staging, self.done = Signal(), Signal(), Signal()
        # ``at_last`` is a flip-flop computed a beat ahead: it gates the ring's read enable,
        # which fans out to every block RAM, so it must not wait for an adder and a compare.
        beat, beats, shift, at_last = Signal(9), Signal(9), Signal(2), Signal()
        previous_word, staged = Signal(32), Signal()
        read_word = Signal(16)  # the next word to read; with en low the read port holds
        m.d.comb += [beats.eq((length + 3)[2:11]), read.addr.eq(read_word[:word_bits]),
                     # A read port's enable resets to 1 (amaranth.lib.memory): held low unless
                     # a state reads, or a stalled beat's word would be replaced by the next.
                     read.en.eq(0)]

        def begin():
            m.d.comb += self.starting.eq(1)
            m.d.ss += staged.eq(0)

        with m.FSM(domain="ss") as fsm:
            with m.State("IDLE"):
                with m.If(go):
                    begin()
                    m.next = "START"
                with m.Elif(stageable & may_stage):
                    m.d.comb += self.staging.eq(1)
                    m.d.ss += staged.eq(1)
                    m.next = "START"
            with m.State("START"):
                m.d.ss += [beat.eq(0), shift.eq(start[:2])]
                with m.If(staged & ~stageable):
                    m.next = "IDLE"
                with m.Elif(length == 0):
                    m.next = "ZLP"
                    with m.If(staged):
                        m.next = "READY"
                with m.Else():
                    m.d.comb += [read.addr.eq(start[2:2 + word_bits]), read.en.eq(1)]
                    m.d.ss += read_word.eq(start[2:] + 1)
                    m.next = "PRIME"
            with m.State("ZLP"):
                # ``tx_zlp`` from a state, not START's compare (an ss timing path: DESIGN §3.9).
                m.d.comb += [zlp.eq(1), self.done.eq(1)]
                m.next = "IDLE"
            with m.State("PRIME"):
                # Two words in hand (previous and read.data) cover any byte alignment.
                m.d.comb += read.en.eq(1)
                m.d.ss += [previous_word.eq(read.data), read_word.eq(read_word + 1),
                           beat.eq(0), at_last.eq(beats == 1)]
                m.next = "SEND"
                with m.If(staged):
                    m.next = "READY"
                    with m.If(~stageable):
                        m.next = "IDLE"
            with m.State("READY"):
                with m.If(go):
                    begin()
                    m.next = "SEND"
                    with m.If(length == 0):
                        m.next = "ZLP"
                with m.Elif(~stageable):
                    m.next = "IDLE"
            with m.State("SEND"):
                remainder = length[:2]
                window = Cat(previous_word, read.data)
                m.d.comb += [
                    tx.valid.eq(Mux(at_last & (remainder != 0),
                                    Mux(remainder == 1, 0b0001,
                                        Mux(remainder == 2, 0b0011, 0b0111)),
                                    0b1111)),
                    tx.first.eq(beat == 0),
                    tx.last.eq(at_last),
                    tx.data.eq((window >> (shift * 8))[:32]),
                ]
                with m.If(tx.ready):
                    m.d.comb += read.en.eq(~at_last)
                    m.d.ss += [beat.eq(beat + 1), at_last.eq(beat + 2 == beats),
                               previous_word.eq(read.data), read_word.eq(read_word + 1)]
                    with m.If(at_last):
                        m.d.comb += self.done.eq(1)
                        m.next = "IDLE"  # valid drops a cycle between packets: LUNA needs it

        self.at_rest = fsm.ongoing("IDLE") | fsm.ongoing("READY")
        # Staged, no packet is on its way yet: the other IN endpoint may send.
        self.busy = ~fsm.ongoing("IDLE") & ~staged
        self.in_send = fsm.ongoing("SEND")
