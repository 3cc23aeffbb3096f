"""The crossing between the ECP5 SerDes' 250 MHz, 2-symbol side and the 125 MHz, 4-symbol PIPE.

The DCU gears only 1:1 or 1:2, so at 5 Gb/s its fabric side moves two symbols per 250 MHz clock
(``pclk``); the SuperSpeed stack runs at 125 MHz with four (``ss``). This module is everything
that runs at 250 MHz, and it is kept to the least that must: each way a 2:1 gearbox whose outputs
are registers, a small FIFO in distributed RAM, and the SerDes side's pointer, Gray-coded in a
register and synchronised by two registers on the 125 MHz side. Every decision (how full a FIFO
is, where a SKP goes in or comes out, when to recentre) is taken at 125 MHz.

Both FIFOs are elastic buffers, as a PIPE PHY's receive buffer is: the SerDes side never waits
(the DCU can neither stall nor be stalled), so the 125 MHz side keeps each FIFO near a target
fill by inserting or removing SKP symbols, and the two clocks may differ by any amount USB 3.0
allows (±300 ppm each, plus a 5000 ppm down-spread). On the ECPIX-5 both clocks come from one
oscillator (the SerDes' reference is a PLL output beside ``ss``), so the fill only settles once;
the DCU's own clock-compensation FIFO absorbs the host's clock before this point.
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import enum, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from luna.gateware.usb.usb3.physical.coding import SKP

__all__ = ["SerdesCrossing", "RxStatus", "SYMBOL_BITS"]

#: A symbol inside the FIFOs: 8 data bits, then the K flag.
SYMBOL_BITS = 9
HALF_BITS = 2 * SYMBOL_BITS   # what the SerDes moves per pclk cycle
WORD_BITS = 4 * SYMBOL_BITS   # what the MAC moves per ss cycle: one FIFO entry
_SKP = SKP.ctrl << 8 | SKP.value


class RxStatus:
    """PIPE 3.0 RxStatus codes this crossing reports with the word they concern."""

    OK = 0b000
    SKP_ADDED = 0b001
    SKP_REMOVED = 0b010
    OVERFLOW = 0b101
    UNDERFLOW = 0b110


class _Plan(enum.Enum, shape=3):
    """What the receive side does at its next position (decided a cycle ahead)."""

    NONE = 0
    REMOVE_FIRST = 1     # the first half is all SKPs: leave it out
    REMOVE_SECOND = 2    # the second half is: leave that out
    ADD_WORD = 3         # the first half starts with a SKP: four SKPs before it
    ADD_PAIR = 4         # a SKP ends the first half or starts the second: two between


def _gray(value):
    return value ^ (value >> 1)


def _binary(m, gray):
    """Gray code to binary (combinational; the caller registers it)."""
    bits = [Signal(name=f"{gray.name}_b{i}") for i in range(len(gray))]
    m.d.comb += bits[-1].eq(gray[-1])
    for i in reversed(range(len(gray) - 1)):
        m.d.comb += bits[i].eq(bits[i + 1] ^ gray[i])
    return Cat(bits)


def _is_skp(symbol):
    return symbol == _SKP


def _symbols(data, datak, count):
    return Cat(Cat(data[8 * i:8 * i + 8], datak[i]) for i in range(count))


class SerdesCrossing(wiring.Component):
    """Gearbox and elastic FIFOs between a 2-symbol, 250 MHz SerDes and a 4-symbol, 125 MHz PIPE.

    Why not LUNA's ``AsyncPIPEInterface``: its ``AsyncFIFOBuffered`` computes full and empty at
    250 MHz (Gray decode, compare and the buffered output's enable chain), and its gearbox word
    selects, control synchronisers and the SerDes' LFPS and register logic share that clock; on
    the ECPIX-5's LFE5UM5G-85F the 250 MHz side reached 199.8 MHz. It also assumes the two
    clocks are locked: nothing keeps its FIFOs from running over if they are not.

    Here the 250 MHz side holds, per direction, only registers that feed the FIFO or the SerDes
    directly, a binary entry counter and its Gray copy, and the distributed-RAM port: no compare,
    no enable that depends on the other side. A FIFO entry is one 4-symbol word. Receive: the
    SerDes' two symbols are registered, paired into an entry and written every other cycle; the
    125 MHz side reads three entries and takes its word at a 2-symbol offset. Over its target
    it leaves out up to two all-SKP symbol pairs a cycle (half the SKPs at worst, where a pair
    straddles two; a clock can be faster than its partner's by no more than 600 ppm, 2.2 % of
    what they carry); under it, it adds SKP pairs beside a SKP for as many cycles as it takes
    (LUNA's receiver takes SKPs at any position). Transmit: the MAC's word is registered and
    written at 125 MHz; an all-SKP word (how LUNA sends SKP ordered sets) is left out when the
    FIFO is over its target or written twice when under, up to every such word (5618 ppm of
    the stream, one per 177 data words: the 5600 ppm USB 3.0 asks for). The 250 MHz side reads
    an entry every other cycle into a register and sends its halves from an output register.
    A fill outside the safe range recentres the FIFO (an overflow or underflow: symbols lost or
    repeated); after reset both sides start centred.

    Attributes
    ----------
    serdes_rx_data: Signal(16), input
    serdes_rx_datak: Signal(2), input
        The SerDes' received symbols (``pclk``); bits [7:0] first.
    serdes_tx_data: Signal(16), output
    serdes_tx_datak: Signal(2), output
        Symbols to send (``pclk``), straight from registers.
    rx_data: Signal(32), output
    rx_datak: Signal(4), output
    rx_status: Signal(3), output
        The received word (``ss``), from registers, with :class:`RxStatus` for it.
    rx_valid: Signal(), output
        The receive FIFO has been centred since reset.
    tx_data: Signal(32), input
    tx_datak: Signal(4), input
        The word to send (``ss``).
    rx_skp_added, rx_skp_removed: Signal(2), output
        SKP pairs added to or left out of the received stream this cycle (``ss``).
    tx_skp_added, tx_skp_removed: Signal(), output
        Strobes (``ss``): an all-SKP word sent twice, or left out.
    rx_recentred, tx_recentred: Signal(), output
        Strobes (``ss``): a fill left the safe range.
    rx_fill, tx_fill: Signal(8), output
        Fill as the 125 MHz side sees it: receive in 2-symbol halves, transmit in entries.

    Parameters
    ----------
    depth: int
        Entries (4-symbol words) per FIFO, a power of two, at least 32.
    """

    #: Fill targets (receive in halves, transmit in entries) and the band around them: the
    #: least fill that keeps reads clear of writes, given the other side's count is 3 ss cycles
    #: old, plus room for the longest run between SKPs (a 1062-symbol packet drifts 6 symbols at
    #: 5600 ppm). The receive fill moves in entries (two halves) at the SerDes' phase, so its
    #: band is wider: with locked clocks neither FIFO adds or removes a SKP.
    RX_TARGET, RX_BAND = 20, 2
    TX_TARGET, TX_BAND = 12, 1

    serdes_rx_data: In(16)
    serdes_rx_datak: In(2)
    serdes_tx_data: Out(16)
    serdes_tx_datak: Out(2)
    rx_data: Out(32)
    rx_datak: Out(4)
    rx_status: Out(3)
    rx_valid: Out(1)
    tx_data: In(32)
    tx_datak: In(4)
    rx_skp_added: Out(2)
    rx_skp_removed: Out(2)
    tx_skp_added: Out(1)
    tx_skp_removed: Out(1)
    rx_recentred: Out(1)
    tx_recentred: Out(1)
    rx_fill: Out(8)
    tx_fill: Out(8)

    def __init__(self, *, depth: int = 32):
        if depth < 32 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of two of at least 32, not {depth}")
        self.depth = depth
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        phase = Signal()  # the gearboxes' half: 0 = symbols 0-1 of a word, 1 = symbols 2-3
        m.d.pclk += phase.eq(~phase)
        self._receive(m, phase)
        self._transmit(m, phase)
        return m

    def _receive(self, m, phase):
        depth, bits = self.depth, self.depth.bit_length() - 1
        m.submodules.rx_fifo = fifo = Memory(shape=WORD_BITS, depth=depth, init=[])

        # 250 MHz: the SerDes' symbols into a register, paired into an entry, written.
        capture, first = Signal(HALF_BITS), Signal(HALF_BITS)
        written = Signal(bits + 1)           # entries written (binary, for the address)
        written_gray = Signal(bits + 1)      # the same, Gray-coded: what crosses
        m.d.pclk += capture.eq(_symbols(self.serdes_rx_data, self.serdes_rx_datak, 2))
        write = fifo.write_port(domain="pclk")
        m.d.comb += [write.addr.eq(written[:bits]), write.data.eq(Cat(first, capture)),
                     write.en.eq(phase)]
        with m.If(phase):
            m.d.pclk += [written.eq(written + 1), written_gray.eq(_gray(written + 1))]
        with m.Else():
            m.d.pclk += first.eq(capture)

        # 125 MHz: the count of written entries, two registers after the crossing.
        synced, available = Signal(bits + 1), Signal(bits + 1)
        m.submodules.rx_sync = FFSynchronizer(written_gray, synced, o_domain="ss")
        m.d.ss += available.eq(_binary(m, synced))

        # The read position counts 2-symbol halves; a word is the two halves at it. The entry
        # addresses after it are registers, updated with the position.
        position, fill = Signal(bits + 2), Signal(bits + 2)
        m.d.comb += [fill.eq(Cat(Const(0, 1), available) - position), self.rx_fill.eq(fill)]
        reads = [fifo.read_port(domain="comb") for _ in range(3)]
        following = [Signal(bits, name=f"rx_entry_{i}") for i in (1, 2)]
        m.d.comb += [reads[0].addr.eq(position[1:bits + 1]), reads[1].addr.eq(following[0]),
                     reads[2].addr.eq(following[1])]
        q = [half for read in reads for half in (read.data[:HALF_BITS], read.data[HALF_BITS:])]
        h = [Mux(position[0], q[i + 1], q[i]) for i in range(5)]
        skp_pair = Const(_SKP | _SKP << SYMBOL_BITS, HALF_BITS)

        # Fill in halves, judged a cycle late (registers): the writer's count is 3 ss cycles
        # (6 halves) old and an entry may be in flight; the three entries read must not be
        # overwritten, and five halves from the position must be written.
        target, least, most = self.RX_TARGET, 6, 2 * depth - 16
        under, over, unsafe = Signal(), Signal(), Signal()
        m.d.ss += [under.eq(fill < target - self.RX_BAND), over.eq(fill > target + self.RX_BAND),
                   unsafe.eq((fill < least) | (fill > most))]

        # What to do at the next position if this cycle moves on by a word: decided from the
        # halves after this word, applied next cycle, so no data decision is in the loop that
        # moves the position. Over the target an all-SKP half is left out; under it, SKPs go in
        # beside a SKP (all-SKP words as long as the fill stays under). One removal per two
        # cycles leaves out half the SKPs at worst (a clock can be faster than its partner's
        # by 600 ppm, 20 % of the SKPs' worth); insertions have no limit.
        plan, settle = Signal(_Plan), Signal(2)
        g = h[2:5]
        next_plan = Mux(over & (g[0] == skp_pair), _Plan.REMOVE_FIRST,
                    Mux(over & (g[1] == skp_pair), _Plan.REMOVE_SECOND,
                    Mux(under & _is_skp(g[0][:SYMBOL_BITS]), _Plan.ADD_WORD,
                    Mux(under & (_is_skp(g[0][SYMBOL_BITS:]) | _is_skp(g[1][:SYMBOL_BITS])),
                        _Plan.ADD_PAIR, _Plan.NONE))))
        running = Signal()
        word, status, advance = Signal(WORD_BITS), Signal(3), Signal(3)
        m.d.comb += self.rx_valid.eq(running)
        with m.If(~running | (unsafe & (settle == 0))):
            m.d.ss += [position.eq(Cat(Const(0, 1), available) - target), running.eq(1),
                       word.eq(Cat(skp_pair, skp_pair)), plan.eq(_Plan.NONE), settle.eq(3)]
            m.d.comb += self.rx_recentred.eq(running)
            m.d.ss += status.eq(Mux(~running, RxStatus.OK,
                                    Mux(over, RxStatus.OVERFLOW, RxStatus.UNDERFLOW)))
        with m.Else():
            m.d.ss += [plan.eq(_Plan.NONE), position.eq(position + advance),
                       status.eq(RxStatus.OK)]
            with m.If(settle != 0):
                m.d.ss += settle.eq(settle - 1)
            with m.Switch(plan):
                with m.Case(_Plan.REMOVE_FIRST):
                    m.d.comb += [advance.eq(3), self.rx_skp_removed.eq(1)]
                    m.d.ss += [word.eq(Cat(h[1], h[2])), status.eq(RxStatus.SKP_REMOVED)]
                with m.Case(_Plan.REMOVE_SECOND):
                    m.d.comb += [advance.eq(3), self.rx_skp_removed.eq(1)]
                    m.d.ss += [word.eq(Cat(h[0], h[2])), status.eq(RxStatus.SKP_REMOVED)]
                with m.Case(_Plan.ADD_WORD):
                    m.d.comb += [advance.eq(0), self.rx_skp_added.eq(2)]
                    m.d.ss += [word.eq(Cat(skp_pair, skp_pair)), status.eq(RxStatus.SKP_ADDED)]
                    with m.If(under):  # same position: the same plan still holds
                        m.d.ss += plan.eq(_Plan.ADD_WORD)
                with m.Case(_Plan.ADD_PAIR):
                    m.d.comb += [advance.eq(1), self.rx_skp_added.eq(1)]
                    m.d.ss += [word.eq(Cat(h[0], skp_pair)), status.eq(RxStatus.SKP_ADDED)]
                with m.Default():
                    m.d.comb += advance.eq(2)
                    m.d.ss += [word.eq(Cat(h[0], h[1])), plan.eq(next_plan)]
        moved = (position + advance)[1:]
        with m.If(running & ~(unsafe & (settle == 0))):
            m.d.ss += [following[0].eq(moved + 1), following[1].eq(moved + 2)]
        with m.Else():
            recentred = (Cat(Const(0, 1), available) - target)[1:]
            m.d.ss += [following[0].eq(recentred + 1), following[1].eq(recentred + 2)]
        m.d.comb += [
            self.rx_data.eq(Cat(word[SYMBOL_BITS * i:SYMBOL_BITS * i + 8] for i in range(4))),
            self.rx_datak.eq(Cat(word[SYMBOL_BITS * i + 8] for i in range(4))),
            self.rx_status.eq(status),
        ]

    def _transmit(self, m, phase):
        depth, bits = self.depth, self.depth.bit_length() - 1
        # Two banks (even and odd entries), so a word can be written twice in one ss cycle.
        banks = [Memory(shape=WORD_BITS, depth=depth // 2, init=[]) for _ in range(2)]
        m.submodules.tx_even, m.submodules.tx_odd = banks

        # 250 MHz: an entry into a register every other cycle, its halves out of another.
        read = Signal(bits + 1)              # entries read (binary, for the address)
        read_gray = Signal(bits + 1)
        current, out = Signal(WORD_BITS), Signal(HALF_BITS)
        ports = [bank.read_port(domain="comb") for bank in banks]
        m.d.comb += [port.addr.eq(read[1:bits]) for port in ports]
        with m.If(phase):
            m.d.pclk += [current.eq(Mux(read[0], ports[1].data, ports[0].data)),
                         read.eq(read + 1), read_gray.eq(_gray(read + 1)),
                         out.eq(current[HALF_BITS:])]
        with m.Else():
            m.d.pclk += out.eq(current[:HALF_BITS])
        m.d.comb += [
            self.serdes_tx_data.eq(Cat(out[:8], out[SYMBOL_BITS:SYMBOL_BITS + 8])),
            self.serdes_tx_datak.eq(Cat(out[8], out[SYMBOL_BITS + 8])),
        ]

        # 125 MHz: the count of read entries, two registers after the crossing.
        synced, consumed = Signal(bits + 1), Signal(bits + 1)
        m.submodules.tx_sync = FFSynchronizer(read_gray, synced, o_domain="ss")
        m.d.ss += consumed.eq(_binary(m, synced))

        # The MAC's word is registered, then held a second cycle beside whether it is all SKPs.
        word, held, skp_word = Signal(WORD_BITS), Signal(WORD_BITS), Signal()
        m.d.ss += [word.eq(_symbols(self.tx_data, self.tx_datak, 4)), held.eq(word),
                   skp_word.eq(word == Cat(Const(_SKP, SYMBOL_BITS) for _ in range(4)))]

        # Fill in entries, an overestimate (the reader's count is 3 ss cycles, 3 entries, old),
        # judged a cycle late. The reader loads an entry a SerDes cycle before it sends it; a
        # doubled word writes two entries ahead.
        target, least, most = self.TX_TARGET, 6, depth - 2
        position, fill, running = Signal(bits + 1), Signal(bits + 1), Signal()
        under, over, unsafe, settle = Signal(), Signal(), Signal(), Signal(2)
        m.d.comb += [fill.eq(position - consumed), self.tx_fill.eq(fill)]
        m.d.ss += [under.eq(fill < target - self.TX_BAND), over.eq(fill > target + self.TX_BAND),
                   unsafe.eq((fill < least) | (fill > most))]
        with m.If(settle != 0):
            m.d.ss += settle.eq(settle - 1)
        at, twice = Signal(bits + 1), Signal()
        with m.If(~running | (unsafe & (settle == 0))):
            m.d.comb += [at.eq(consumed + target), self.tx_recentred.eq(running)]
            m.d.ss += [position.eq(consumed + target + 1), running.eq(1), settle.eq(3)]
        with m.Elif(over & skp_word):
            m.d.comb += self.tx_skp_removed.eq(1)
        with m.Elif(under & skp_word):
            m.d.comb += [at.eq(position), twice.eq(1), self.tx_skp_added.eq(1)]
            m.d.ss += position.eq(position + 2)
        with m.Else():
            m.d.comb += at.eq(position)
            m.d.ss += position.eq(position + 1)
        writes = ~self.tx_skp_removed
        second = (at + 1)[:bits + 1]
        for parity, bank in enumerate(banks):
            port = bank.write_port(domain="ss")
            own = at[0] == parity
            m.d.comb += [port.en.eq(writes & (own | twice)), port.data.eq(held),
                         port.addr.eq(Mux(own, at[1:bits], second[1:bits]))]
