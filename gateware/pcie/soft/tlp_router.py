"""The soft endpoint's transaction-layer router: memory requests to BAR0 and completions for
the application, Unsupported Request for the rest (PCIe Base 3.0 §2.3.1, §2.3.2)."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from busprobe.protocol import pcie
from busprobe.protocol import pcie_config as cfg
from busprobe.protocol.pcie_config import CplStatus, TlpKind, TlpType5

from .fc_init import NON_POSTED_HEADERS, POSTED_DATA, POSTED_HEADERS
from .word_deframer import RX_TLP_BYTE
from .word_framer import TLP_BYTE, TLP_DW, tlp_units, unit_size

__all__ = ["TlpRouter", "APP_TLP_BYTE", "APP_TLP_DW"]

#: A TLP byte for the application; ``last`` on its last byte.
APP_TLP_BYTE = data.StructLayout({"data": 8, "last": 1})
#: The same a DW at a time (the four-symbol link's), byte 0 in bits 7:0; ``last`` on its last.
APP_TLP_DW = data.StructLayout({"data": 32, "last": 1})
#: What a UR completion needs from its request.
_UR_REQUEST = data.StructLayout({"tc": 3, "attr": 2, "requester": 16, "tag": 8})
_CAPTURED = 16  # a 4 DW header: every field the router looks at
#: The store holds two TLPs of the largest payload the deframer passes (512 B + 4 DW header).
DEFAULT_STORE_BYTES = 2048


class TlpRouter(wiring.Component):
    """Sorts the kept TLPs that are not configuration requests (those are
    :class:`~.config_space.ConfigSpace`'s, beside it on the same units).

    - MRd / MWr (3 or 4 DW header) whose address falls in BAR0 while the Command register's
      Memory Space bit is set, and Cpl/CplD whose Requester ID is the endpoint's own: whole,
      in order, on ``source``. The units are stored as they arrive and the TLP is committed at
      ``rx_accept``; a TLP dropped by the data link layer is rewound, so the application never
      sees a TLP that will be replayed. A TLP that does not fit in the store is dropped and
      counted (``overflows``): the credits advertised are to keep that from happening.
    - Other non-posted requests (MRd outside BAR0 or with Memory Space off, MRdLk, I/O,
      AtomicOps, any type not known here): a Cpl with Unsupported Request on ``ur_tlp``
      (``unsupported_requests``). The request's header credit is held until that Cpl has left
      (``np_held``, ``np_released``), and the queue holds as many as the non-posted header
      credits advertised, so none is dropped; a request arriving with the queue full all
      the same (a root port beyond its credits) is dropped without one.
    - Posted requests not for the endpoint (MWr outside BAR0, every message): dropped and
      counted (``unsupported_posted``), as §2.3.1 has an endpoint do for a posted UR (no error
      message: the endpoint sends none yet). Completions for another requester: dropped and
      counted (``unexpected_completions``).

    Attributes
    ----------
    rx_tlp: stream of ``unit``, input (never stalled); rx_accept: Signal(), input
        As :class:`~.config_space.ConfigSpace` takes them.
    memory_space: Signal(), input; bar0_base: Signal(32), input; completer_id: Signal(16), input
        From the configuration space.
    source: stream of APP_TLP_BYTE (or APP_TLP_DW with DWs), output
        Routed TLPs, byte 0 first (header fields big-endian, as on the wire).
    ur_tlp: stream of TLP_BYTE (or TLP_DW with DWs), output
        UR completions, valid from first unit to last as the framer needs.
    unsupported_requests, unsupported_posted, unexpected_completions, overflows: Signal(16)
        Counters (wrap).
    np_held: Signal(), output; np_released: Signal(2), output
        A request queued for UR or stored for the application at ``rx_accept`` (its header
        credit held); UR Cpls and stored requests whose last unit was taken this clock
        (released): :class:`~.update_fc.UpdateFc`'s inputs.
    p_held: Signal(), output; p_released: Signal(), output
        A posted request stored at ``rx_accept`` (its credits held until the application has
        taken it), and a stored posted request's last unit taken (released). With the
        credits advertised (``fc_init.ADVERTISED``) the store and its queue of lengths hold
        every request the root port may send.

    Parameters
    ----------
    store_bytes: int
        The receive store's size in bytes (a power of two).
    max_tlps: int
        How many committed TLPs the store may hold at once (the queue of their lengths).
    unit: StructLayout
        What TLPs arrive in: :data:`~.word_deframer.RX_TLP_BYTE` (the default) or
        :data:`~.word_deframer.RX_TLP_DW` (the four-symbol link's); ``source`` and ``ur_tlp`` then
        move the same unit (:data:`APP_TLP_DW`, :data:`~.word_framer.TLP_DW`), and the store holds
        ``store_bytes`` as units.
    """

    def __init__(self, *, store_bytes: int = DEFAULT_STORE_BYTES, max_tlps: int = 16,
                 unit: data.StructLayout = RX_TLP_BYTE):
        assert store_bytes & (store_bytes - 1) == 0
        self._unit_bytes = unit_size(unit)
        dw = self._unit_bytes == 4
        # Every request the credits allow must fit while the application takes none: a 4 DW
        # header each and the posted data (completions are the requester's to size for).
        requests = POSTED_HEADERS + NON_POSTED_HEADERS
        if max_tlps < requests or store_bytes < 16 * (requests + POSTED_DATA):
            raise ValueError(f"a router store of {store_bytes} bytes / {max_tlps} TLPs cannot "
                             f"hold the {requests} requests and {16 * POSTED_DATA} bytes of "
                             f"posted data the credits advertised allow")
        self._store_bytes = store_bytes
        self._max_tlps = max_tlps
        super().__init__({
            "rx_tlp": In(stream.Signature(unit, always_ready=True)),
            "rx_accept": In(1),
            "memory_space": In(1),
            "bar0_base": In(32),
            "completer_id": In(16),
            "source": Out(stream.Signature(APP_TLP_DW if dw else APP_TLP_BYTE)),
            "ur_tlp": Out(stream.Signature(TLP_DW if dw else TLP_BYTE)),
            "unsupported_requests": Out(16),
            "unsupported_posted": Out(16),
            "unexpected_completions": Out(16),
            "overflows": Out(16),
            "np_held": Out(1),
            "np_released": Out(2),
            "p_held": Out(1),
            "p_released": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        width = 8 * self._unit_bytes
        depth = self._store_bytes // self._unit_bytes  # in units, as everything counted below
        pointer = range(2 * depth)  # one bit more than an index: full and empty told apart

        # Capture the header; count the units. -------------------------------------------------
        header = Signal(8 * _CAPTURED)
        captured = _CAPTURED // self._unit_bytes  # header units captured: 16 or 4
        count = Signal(range(depth + 1))  # saturates: longer than the store is an overflow
        unit = self.rx_tlp.payload.data
        with m.If(self.rx_tlp.valid):
            with m.If(self.rx_tlp.payload.first):
                m.d.sync += [header[:width].eq(unit), count.eq(1)]
            with m.Else():
                with m.If(count < depth):
                    m.d.sync += count.eq(count + 1)
                with m.If(count < captured):
                    at = count[:(captured - 1).bit_length()]
                    m.d.sync += header.word_select(at, width).eq(unit)
        # Header byte i either way: a DW's byte 0 (first on the wire) is in its bits 7:0.
        b = [header[8 * i:8 * (i + 1)] for i in range(_CAPTURED)]

        kind = b[0]
        tlp_type = kind & cfg.TYPE_MASK
        with_data = (kind & cfg.FMT_WITH_DATA) != 0
        four_dw = (kind & cfg.FMT_4DW) != 0
        is_config = ((kind == TlpKind.CFG_RD0) | (kind == TlpKind.CFG_WR0)
                     | (kind == TlpKind.CFG_RD1) | (kind == TlpKind.CFG_WR1))
        is_memory = tlp_type == TlpType5.MEM
        is_message = (tlp_type & cfg.MSG_TYPE_MASK) == cfg.MSG_TYPE
        is_completion = (tlp_type == TlpType5.CPL) | (tlp_type == TlpType5.CPL_LOCKED)
        posted = (is_memory & with_data) | is_message

        def be32(first):
            return Cat(b[first + 3], b[first + 2], b[first + 1], b[first])
        # BAR0 is a 32-bit BAR: a 4 DW request hits only with its upper address dword 0.
        address = Mux(four_dw, be32(cfg.REQ_ADDRESS + 4), be32(cfg.REQ_ADDRESS))
        below_4g = ~four_dw | (be32(cfg.REQ_ADDRESS) == 0)
        offset_bits = (pcie.BAR0_SIZE - 1).bit_length()
        in_bar0 = (self.memory_space & below_4g
                   & (address[offset_bits:] == self.bar0_base[offset_bits:]))
        requester_of_cpl = Cat(b[cfg.CPL_REQUESTER_ID + 1], b[cfg.CPL_REQUESTER_ID])
        ours = is_completion & (requester_of_cpl == self.completer_id)
        routed = (is_memory & in_bar0) | ours

        # The store: written as units come, committed at rx_accept. ---------------------------
        m.submodules.store = store = Memory(shape=width, depth=depth, init=[])
        # Each stored TLP's length, and whether its credits are held (posted, non-posted).
        entry = data.StructLayout({"count": len(count), "posted": 1, "non_posted": 1})
        m.submodules.lengths = lengths = fifo.SyncFIFOBuffered(width=entry.size,
                                                               depth=self._max_tlps)
        stored, head = Signal(entry), Signal(entry)
        m.d.comb += [stored.count.eq(count), stored.posted.eq(posted),
                     stored.non_posted.eq(is_memory & ~posted),
                     lengths.w_data.eq(stored), head.eq(lengths.r_data)]
        write_port = store.write_port()
        # A registered read, so the store is block RAM (a combinational read is LUT RAM: on
        # the Versa 1,000 LUT4 for 2 KiB, and the deframer -> store write on the link's worst
        # path). Its address looks a unit ahead (``read_next``): the port's output is the unit
        # at ``read`` every clock, so the last unit of one TLP and the first of the next follow
        # without a gap. Not transparent: a unit is read no sooner than the clock after its
        # write, since ``source`` waits for the commit (``rx_accept``) and the lengths queue.
        read_port = store.read_port(domain="sync")
        committed, speculative, read = Signal(pointer), Signal(pointer), Signal(pointer)
        overflow = Signal()
        start = Mux(self.rx_tlp.payload.first, committed, speculative)
        room = (start - read)[:len(committed)] < depth  # modulo the pointers' range
        m.d.comb += [write_port.addr.eq(start[:-1]), write_port.data.eq(unit)]
        with m.If(self.rx_tlp.valid):
            m.d.sync += speculative.eq(start + 1)
            with m.If(self.rx_tlp.payload.first):
                m.d.sync += overflow.eq(0)
            with m.If(room):
                m.d.comb += write_port.en.eq(1)
            with m.Else():
                m.d.sync += overflow.eq(1)
        take = self.rx_accept & routed
        store_np_held = Signal()
        with m.If(take):
            with m.If(overflow | ~lengths.w_rdy | (count == depth)):
                m.d.sync += self.overflows.eq(self.overflows + 1)
            with m.Else():
                m.d.comb += [lengths.w_en.eq(1), self.p_held.eq(stored.posted),
                             store_np_held.eq(stored.non_posted)]
                m.d.sync += committed.eq(speculative)

        # Routed TLPs out, whole. --------------------------------------------------------------
        store_np_released = Signal()
        sent = Signal(range(depth + 1))
        last = sent + 1 == head.count
        advance = self.source.valid & self.source.ready
        read_next = Signal(pointer)
        m.d.comb += [read_next.eq(Mux(advance, read + 1, read)),
                     read_port.addr.eq(read_next[:-1]), self.source.valid.eq(lengths.r_rdy),
                     self.source.payload.data.eq(read_port.data),
                     self.source.payload.last.eq(last)]
        m.d.sync += read.eq(read_next)
        with m.If(advance):
            m.d.sync += sent.eq(Mux(last, 0, sent + 1))
            m.d.comb += [lengths.r_en.eq(last), self.p_released.eq(last & head.posted),
                         store_np_released.eq(last & head.non_posted)]

        # Unsupported: UR completions for non-posted requests, counts for the rest. ------------
        m.submodules.ur_queue = ur_queue = fifo.SyncFIFOBuffered(width=_UR_REQUEST.size,
                                                                 depth=NON_POSTED_HEADERS)
        kept = self.rx_accept & ~is_config & ~routed
        ur_np_held, ur_np_released = Signal(), Signal()
        m.d.comb += [self.np_held.eq(ur_np_held | store_np_held),
                     self.np_released.eq(ur_np_released + store_np_released)]
        with m.If(kept & is_completion):
            m.d.sync += self.unexpected_completions.eq(self.unexpected_completions + 1)
        with m.Elif(kept & posted):
            m.d.sync += self.unsupported_posted.eq(self.unsupported_posted + 1)
        with m.Elif(kept):
            m.d.sync += self.unsupported_requests.eq(self.unsupported_requests + 1)
            request = Signal(_UR_REQUEST)
            m.d.comb += [
                request.tc.eq(b[1][4:7]), request.attr.eq(b[cfg.REQ_FLAGS][4:6]),
                request.requester.eq(Cat(b[cfg.REQ_REQUESTER_ID + 1], b[cfg.REQ_REQUESTER_ID])),
                request.tag.eq(b[cfg.REQ_TAG]),
                ur_queue.w_data.eq(request), ur_queue.w_en.eq(1),
                ur_np_held.eq(ur_queue.w_rdy),
            ]

        head = Signal(_UR_REQUEST)
        m.d.comb += head.eq(ur_queue.r_data)
        # A Cpl: header DW 0, DW 1 (completer, UR, Byte Count 4 as config's), DW 2 (requester,
        # tag, Lower Address 0); its bytes, then as units (byte 0 of each in the low bits).
        out_bytes = [
            Const(TlpKind.CPL, 8), head.tc << 4, head.attr << 4, Const(0, 8),
            self.completer_id[8:], self.completer_id[:8],
            Cat(Const(cfg.CONFIG_COMPLETION_BYTE_COUNT >> 8, 5), Const(CplStatus.UR, 3)),
            Const(cfg.CONFIG_COMPLETION_BYTE_COUNT & 0xFF, 8),
            head.requester[8:], head.requester[:8], head.tag, Const(0, 8),
        ]
        out = tlp_units(out_bytes, self._unit_bytes)
        index = Signal(range(len(out)))
        ur_last = index == len(out) - 1
        with m.Switch(index):
            for i, value in enumerate(out):
                with m.Case(i):
                    m.d.comb += self.ur_tlp.payload.data.eq(value)
        m.d.comb += [self.ur_tlp.valid.eq(ur_queue.r_rdy), self.ur_tlp.payload.last.eq(ur_last)]
        with m.If(self.ur_tlp.valid & self.ur_tlp.ready):
            m.d.sync += index.eq(Mux(ur_last, 0, index + 1))
            m.d.comb += [ur_queue.r_en.eq(ur_last), ur_np_released.eq(ur_last)]
        return m
