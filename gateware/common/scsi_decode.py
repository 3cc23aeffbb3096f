"""The null disk's SCSI decode: a command block in, what answers it out, for every transport.

Bulk-Only Transport (:class:`~.scsi_engine.ScsiBotEngine`) and USB Attached SCSI carry the same
commands to the same disk: both decode them here, so a command gets the same answer, length and
sense from the same replies RAM whichever alternate setting carried it.
"""

import enum

from amaranth import Mux, Signal
from busprobe.protocol import scsi, scsi_mode
from busprobe.protocol.scsi import Op
from busprobe.protocol.storage import BLOCK_SIZE

__all__ = ["Kind", "ScsiDecode", "BLOCK_SHIFT"]

BLOCK_SHIFT = (BLOCK_SIZE - 1).bit_length()


class Kind(enum.Enum):
    """Where a command's data come from or go to."""

    NONE = 0
    TABLE = 1   # a data-in answer from the replies RAM
    READ = 2    # data-in: the LBA pattern
    WRITE = 3   # data-out: checked against the LBA pattern


class ScsiDecode:
    """The decode of one command block, in two registered steps: :meth:`plan` decodes the
    command block (what answers it, whether it fails), :meth:`settle` the cycle after gives the
    lengths and the kind; the outputs are registered a cycle after :meth:`settle` is active.

    Not a component of its own: it lives in its transport engine's module (and so under that
    engine's reset), :meth:`plan` and :meth:`settle` called in two consecutive states of the
    engine. (In one step, from the command block through the decode, the capacity compare and
    the answer's length into ``device_length``, it was an ``ss`` timing path on the ECPIX-5,
    issue 44 item 7: a cycle a command.)

    Attributes
    ----------
    kind: Signal(Kind)
        NONE for a command without data or one that failed.
    fail: Signal(range(len(scsi.SENSE_CONDITIONS)))
        The condition the command failed with (0: it did not).
    sense: Signal(range(len(scsi.SENSE_CONDITIONS)))
        What the next REQUEST SENSE returns (kept across commands).
    word: Signal(range(replies.depth))
        The answer's first word in the replies RAM (TABLE).
    device_length: Signal(42)
        Bytes of data the command has (its answer's, its allocation length's, or its blocks').
    lba, blocks: Signal(32)
        READ / WRITE: the first block and how many.

    Parameters
    ----------
    replies: StorageReplies
        The answers' places in the replies RAM.
    capacity_blocks: int
    """

    def __init__(self, *, replies, capacity_blocks):
        self._replies, self._capacity = replies, capacity_blocks
        self.kind = Signal(Kind)
        self.fail = Signal(range(len(scsi.SENSE_CONDITIONS)))
        self.sense = Signal.like(self.fail)
        self.word = Signal(range(replies.depth))
        self.device_length = Signal(42)
        self.lba, self.blocks = Signal(32), Signal(32)
        # Between plan and settle: the command's kind and answer length, the condition its
        # operation code found (if any), and the conditions that win over it.
        self._kind, self._failed, self._fail = Signal(Kind), Signal(), Signal.like(self.fail)
        self._length, self._alloc = Signal(16), Signal(32)
        self._out_of_range, self._short, self._lun_bad = Signal(), Signal(), Signal()
        self._request_sense = Signal()

    def plan(self, m, *, cb, cdb_length, lun, capture):
        """Decode the command block: what answers it, how long, whether it fails.

        ``cb(first, count)`` gives bytes of the CDB big-endian; ``cdb_length`` the bytes the
        transport says it has; ``lun`` its LUN (nonzero fails); ``capture`` is driven high
        when the telemetry page is asked for (its snapshot must be taken now).
        """
        sync, replies = m.d.usb, self._replies
        opcode = cb(0)
        c_kind, c_fail, c_failed = Signal(Kind), Signal.like(self.fail), Signal()
        c_word, c_length, c_alloc = Signal.like(self.word), Signal(16), Signal(32)
        is16 = (opcode == Op.READ_16) | (opcode == Op.WRITE_16)
        c_lba = Mux(is16, cb(2, 8)[:32], cb(2, 4))
        c_blocks = Mux(is16, cb(10, 4), cb(7, 2))
        # Both groups' sums straight from the command block's bytes, the opcode choosing between
        # the compares: through the opcode's decode and the LBA multiplexer into one adder's
        # carry chain was the ECPIX-5 ``ss`` critical path (111.86 MHz, default seed; issue 44
        # item 7). (READ (16)'s LBA: bytes 2-9, its low 32 bits bytes 6-9.)
        past16 = (cb(2, 4) != 0) | ((cb(6, 4) + cb(10, 4)) > self._capacity)
        past10 = (cb(2, 4) + cb(7, 2)) > self._capacity
        out_of_range = Mux(is16, past16, past10)
        need = Signal(5)

        def table(reply, alloc):
            m.d.comb += [c_kind.eq(Kind.TABLE), c_word.eq(reply.word),
                         c_length.eq(reply.length), c_alloc.eq(alloc)]

        def illegal(asc):
            m.d.comb += [c_fail.eq(scsi.SENSE_CONDITIONS.index(asc)), c_failed.eq(1)]

        with m.Switch(opcode):
            with m.Case(Op.TEST_UNIT_READY, Op.START_STOP_UNIT, Op.PREVENT_ALLOW_MEDIUM_REMOVAL,
                        Op.SYNCHRONIZE_CACHE_10, Op.SYNCHRONIZE_CACHE_16):
                pass
            with m.Case(Op.REQUEST_SENSE):
                # Sense blocks are 5 words apart: 4 * sense + sense, no multiplier.
                m.d.comb += [c_kind.eq(Kind.TABLE),
                             c_word.eq(replies.sense[0].word + (self.sense << 2) + self.sense),
                             c_length.eq(scsi.SENSE_SIZE), c_alloc.eq(cb(4))]
            with m.Case(Op.INQUIRY):
                evpd, page, alloc = cb(1)[0], cb(2), cb(3, 2)
                with m.If(~evpd):
                    table(replies.inquiry, alloc)
                    with m.If(page != 0):
                        illegal(scsi.Asc.INVALID_FIELD_IN_CDB)
                with m.Else():
                    with m.Switch(page):
                        for code, reply in replies.vpd.items():
                            with m.Case(code):
                                table(reply, alloc)
                        with m.Case(scsi.VPD_TELEMETRY):
                            table(replies.telemetry, alloc)
                            m.d.comb += capture.eq(1)
                        with m.Default():
                            illegal(scsi.Asc.INVALID_FIELD_IN_CDB)
            with m.Case(Op.MODE_SENSE_6):
                self._mode_sense(m, table, illegal, cb, ten=False)
            with m.Case(Op.MODE_SENSE_10):
                self._mode_sense(m, table, illegal, cb, ten=True)
            with m.Case(Op.READ_CAPACITY_10):
                table(replies.capacity_10, 8)
            with m.Case(Op.SERVICE_ACTION_IN_16):
                table(replies.capacity_16, cb(10, 4))
                with m.If(cb(1)[:5] != scsi.READ_CAPACITY_16_ACTION):
                    illegal(scsi.Asc.INVALID_FIELD_IN_CDB)
            with m.Case(Op.REPORT_LUNS):
                table(replies.report_luns, cb(6, 4))
            with m.Case(Op.READ_10, Op.READ_16, Op.WRITE_10, Op.WRITE_16):
                m.d.comb += c_kind.eq(Mux(opcode[1], Kind.WRITE, Kind.READ))
            with m.Default():
                illegal(scsi.Asc.INVALID_COMMAND_OPERATION_CODE)

        # A CDB shorter than its operation code's group says is malformed; a LUN but 0 is absent.
        with m.Switch(opcode):
            for op in Op:
                with m.Case(op):
                    m.d.comb += need.eq(scsi.cdb_length(op))
        # An LBA range past the capacity (READ / WRITE), a short CDB and a LUN but 0: applied by
        # settle, from registers; the last two win over the operation code's conditions.
        sync += [self._out_of_range.eq(out_of_range), self._short.eq(cdb_length < need),
                 self._lun_bad.eq(lun != 0)]

        sync += [self._kind.eq(c_kind), self._failed.eq(c_failed), self._fail.eq(c_fail),
                 self._length.eq(c_length), self._alloc.eq(c_alloc), self.word.eq(c_word),
                 self.lba.eq(c_lba), self.blocks.eq(c_blocks),
                 self._request_sense.eq(opcode == Op.REQUEST_SENSE)]

    def settle(self, m):
        """The second step, the cycle after :meth:`plan`: the condition the command failed with
        (the later one wins: the operation code's, an LBA range past the capacity, a CDB
        shorter than its group's, a LUN but 0), ``sense``, ``kind`` and ``device_length``."""
        sync, c_kind = m.d.usb, self._kind

        def index(asc):
            return scsi.SENSE_CONDITIONS.index(asc)
        fail = Mux(self._lun_bad, index(scsi.Asc.LOGICAL_UNIT_NOT_SUPPORTED),
                   Mux(self._short, index(scsi.Asc.INVALID_FIELD_IN_CDB),
                       Mux(self._out_of_range & ((c_kind == Kind.READ) | (c_kind == Kind.WRITE)),
                           index(scsi.Asc.LBA_OUT_OF_RANGE), self._fail)))
        # Whether it failed is an OR of the conditions, not read back from the priority mux
        # (that mux in front of ``device_length`` was the ECPIX-5 ``ss`` clock's critical path,
        # 123.06 MHz for 125).
        failed = (self._failed | self._lun_bad | self._short
                  | (self._out_of_range & ((c_kind == Kind.READ) | (c_kind == Kind.WRITE))))
        sync += [self.fail.eq(fail), self.sense.eq(fail)]
        with m.If(~failed & self._request_sense):
            sync += self.sense.eq(0)
        table_length = Mux(self._alloc < self._length, self._alloc, self._length)
        with m.Switch(c_kind):
            with m.Case(Kind.TABLE):
                sync += self.device_length.eq(table_length)
            with m.Case(Kind.READ, Kind.WRITE):
                sync += self.device_length.eq(self.blocks << BLOCK_SHIFT)
            with m.Default():
                sync += self.device_length.eq(0)
        sync += self.kind.eq(Mux(failed, Kind.NONE, c_kind))
        with m.If(failed):
            sync += self.device_length.eq(0)

    def _mode_sense(self, m, table, illegal, cb, *, ten):
        """MODE SENSE (6) or (10): the answer to the CDB's page code and page control (byte 2)
        from the replies RAM, or the failure the protocol's
        :func:`~busprobe.protocol.scsi_mode.mode_sense` has for it. A later ``illegal`` wins
        over an earlier one, so saved values come last: the protocol checks them first."""
        page_and_control, subpage = cb(2), cb(3)
        with m.Switch(page_and_control):
            for (is_ten, page, control), reply in self._replies.mode_sense.items():
                if is_ten == ten:
                    with m.Case(page | control << 6):
                        table(reply, cb(7, 2) if ten else cb(4))
            with m.Default():
                illegal(scsi.Asc.INVALID_FIELD_IN_CDB)
        with m.If((subpage != 0) & (subpage != scsi_mode.MODE_SUBPAGE_ALL)):
            illegal(scsi.Asc.INVALID_FIELD_IN_CDB)
        with m.If(page_and_control[6:] == scsi_mode.PageControl.SAVED):
            illegal(scsi.Asc.SAVING_PARAMETERS_NOT_SUPPORTED)
