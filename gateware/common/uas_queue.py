"""The null disk's UAS task set: the commands a host has outstanding, held in slots the engine
takes them from in an order of the device's choosing (UAS-2, SAM-5's task set).

The command pipe's information units are judged as they arrive, whatever the engine is doing:

- a COMMAND IU goes into a free slot (its tag in a register, its CDB in a RAM); one whose tag
  is already outstanding is answered with a RESPONSE IU of OVERLAPPED TAG ATTEMPTED, and one
  that finds every slot taken with a SENSE IU of status TASK SET FULL (SAM-5 §5.3.3: the host
  retries it later; Linux's SCSI layer lowers its queue depth and requeues it);
- a TASK MANAGEMENT IU is carried out at once: ABORT TASK of a queued command empties its slot
  (it is never executed and never answered); LOGICAL UNIT RESET empties every queued slot and
  clears the sense REQUEST SENSE would return; both are answered TMF COMPLETE, as is an ABORT
  TASK naming no command (SAM-5 §7.2). The command the engine is executing runs to its end: an
  ABORT TASK naming it is answered TMF FAILED, and LOGICAL UNIT RESET leaves it;
- anything else is answered with INVALID INFORMATION UNIT;
- with bulk streams (``max_tag``), an IU whose tag names no stream the host can allocate (0,
  or past MaxStreams) is dropped, neither carried out nor answered: the tag is the Stream ID
  of its answer, which only the host primes (USB 3.2 §8.12.1.4), so an answer would wait at
  the front of the status pipe's ring for good, every later one behind it.

Those answers wait in a small queue of replies the engine sends on the status pipe between
commands. The engine takes the queued commands round robin from the slot after the last one it
took, so none waits behind more than ``depth - 1`` others whatever the host keeps sending, and
commands complete out of the order they came in once slots are reused.
"""

from types import SimpleNamespace

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from busprobe.protocol import uas

from .first_set import first_set
from .packet_stream import PacketStreamSignature

__all__ = ["UasTaskSet", "REPLIES_DEPTH"]

#: Replies (RESPONSE IUs and TASK SET FULL) waiting for the status pipe; the command pipe waits
#: (NAKs) when they are all taken.
REPLIES_DEPTH = 4
_CDB_BYTES = 16


class UasTaskSet(wiring.Component):
    """The task set of a UAS target: slots for queued commands, the judgement of each IU, and
    the replies that do not come from a command's execution.

    Attributes
    ----------
    packets: PacketStreamSignature(width), input
        The command pipe's OUT endpoint.
    command_valid: Signal(), output
        A queued command is loaded in ``tag``, ``cdb`` and ``lun_bad`` for the engine.
    take: Signal(), input
        Strobe (with ``command_valid``): the engine starts it; the fields hold until ``done``.
    done: Signal(), input
        Strobe: the engine has sent the command's SENSE IU; its slot is free.
    tag: Signal(16), output
    cdb: Signal(128), output
        The command block, its first byte in the low bits.
    lun_bad: Signal(), output
        The command names a LUN other than 0.
    reply_valid: Signal(), output
        A reply waits for the status pipe: ``reply_tag`` and either ``reply_full`` (a SENSE IU
        of TASK SET FULL) or the RESPONSE IU's ``reply_code``.
    reply_taken: Signal(), input
        Strobe: the engine took the reply.
    reply_tag: Signal(16), output
    reply_code: Signal(8), output
    reply_full: Signal(), output
    clear_sense: Signal(), output
        Strobe: a LOGICAL UNIT RESET was carried out.
    outstanding: Signal(range(depth + 1)), output
        Commands in the slots, queued or executing.
    task_set_full, overlapped, aborted: Signal(), output
        Strobes: a command was refused for want of a slot, for a tag outstanding; a queued
        command was removed by ABORT TASK or LOGICAL UNIT RESET (one strobe per reset).
    bad_tag: Signal(), output
        Strobe: an IU was dropped for a tag outside 1..``max_tag``.

    Parameters
    ----------
    width: int
        Bytes a beat of ``packets`` (1 at high speed, 4 at SuperSpeed).
    depth: int
        Slots: commands the device keeps outstanding before it answers TASK SET FULL.
    max_tag: int or None
        With bulk streams, the streams the host can allocate: IUs with a tag outside
        1..``max_tag`` are dropped (``bad_tag``). None (no streams): every tag is taken.
    """

    def __init__(self, *, width=1, depth=uas.TASK_SET_DEPTH, max_tag=None):
        if _CDB_BYTES % width or uas.COMMAND_SIZE % width:
            raise ValueError(f"a beat of {width} bytes does not divide the COMMAND IU")
        self._width, self._depth, self._max_tag = width, depth, max_tag
        super().__init__({
            "packets": In(PacketStreamSignature(width)),
            "command_valid": Out(1), "take": In(1), "done": In(1),
            "tag": Out(16), "cdb": Out(8 * _CDB_BYTES), "lun_bad": Out(1),
            "reply_valid": Out(1), "reply_taken": In(1), "reply_tag": Out(16),
            "reply_code": Out(8), "reply_full": Out(1),
            "clear_sense": Out(1), "outstanding": Out(range(depth + 1)),
            "task_set_full": Out(1), "overlapped": Out(1), "aborted": Out(1),
            "bad_tag": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        sync = m.d.usb
        width, depth = self._width, self._depth
        beats_per_cdb = _CDB_BYTES // width
        m.submodules.cdbs = cdbs = Memory(shape=8 * width, depth=depth * beats_per_cdb, init=[])
        write, read = cdbs.write_port(domain="usb"), cdbs.read_port(domain="usb")

        queued, running = Signal(depth), Signal(depth)
        tags = [Signal(16, name=f"tag_{i}") for i in range(depth)]
        sync += [self.task_set_full.eq(0), self.overlapped.eq(0), self.aborted.eq(0),
                 self.clear_sense.eq(0), self.bad_tag.eq(0)]

        # -- replies: a ring of REPLIES_DEPTH (tag, code, full)
        ring = [Signal(25, name=f"reply_{i}") for i in range(REPLIES_DEPTH)]
        head, count = Signal(range(REPLIES_DEPTH)), Signal(range(REPLIES_DEPTH + 1))
        front = Signal(25)
        m.d.comb += [front.eq(Cat(*ring).word_select(head, 25)),
                     self.reply_valid.eq(count != 0),
                     Cat(self.reply_tag, self.reply_code, self.reply_full).eq(front)]
        push, pushed = Signal(), Signal(25)
        popped = self.reply_taken & (count != 0)
        with m.If(popped):
            sync += head.eq(head + 1)
        with m.If(push):
            tail = (head + count)[:max(1, (REPLIES_DEPTH - 1).bit_length())]
            for i in range(REPLIES_DEPTH):
                with m.If(tail == i):
                    sync += ring[i].eq(pushed)
        sync += count.eq(count + push - popped)

        def reply(tag, *, code=0, full=0):
            m.d.comb += [push.eq(1), pushed.eq(Cat(tag, Const(int(code), 8), Const(full, 1)))]

        # -- the IU being received, whole (32 bytes at most are kept)
        iu = Signal(8 * uas.COMMAND_SIZE)
        beats = uas.COMMAND_SIZE // width
        received = Signal(range(beats + 2))

        def iu_bytes(first, count=1):
            return Cat(*(iu.word_select(first + count - 1 - i, 8) for i in range(count)))

        iu_id, iu_tag = iu_bytes(0), iu_bytes(2, 2)
        is_command = (iu_id == uas.IuId.COMMAND) & (received == beats)
        is_task = (iu_id == uas.IuId.TASK_MANAGEMENT) & (received == uas.TASK_SIZE // width)
        key, key_r = Mux(is_task, iu_bytes(uas.TASK_OFFSETS["task_tag"], 2), iu_tag), Signal(16)

        # -- the lookup: which slot holds the key, which is the first free (registered)
        match_q, match_r, free = Signal(depth), Signal(depth), Signal(depth)
        _, first_free = first_set(m, ~(queued | running), name="free")
        slot = Signal(range(depth))
        # A command the engine takes changes its slot from queued to running: the lookup's
        # registers are taken again if that happened since (``took``).
        took = Signal()
        store = Signal(range(beats_per_cdb + 1))
        lun = iu_bytes(uas.COMMAND_OFFSETS["lun"], 8)
        lun_bad = Signal(depth)
        # A slot leaves ``queued`` here (abort, reset) or when the engine takes it.
        dequeue, enqueue, reset_lu = Signal(depth), Signal(depth), Signal()
        # The engine's side's strobes (below): a slot taken, a slot done.
        take, finish = Signal(depth), Signal(depth)

        decoded = SimpleNamespace(command=Signal(name="decoded_command"),
                                  task=Signal(name="decoded_task"),
                                  lun_bad=Signal(name="decoded_lun_bad"),
                                  abort=Signal(name="decoded_abort"),
                                  lu_reset=Signal(name="decoded_lu_reset"),
                                  bad_tag=Signal(name="decoded_bad_tag"))
        if self._max_tag is None:
            tag_bad = Const(0)
        else:
            tag_bad = (iu_tag == 0) | (iu_tag > self._max_tag)

        abort_deciding = Signal()
        with m.FSM(domain="usb", name="ingest") as ingest:
            with m.State("RECEIVE"):
                m.d.comb += self.packets.ready.eq(1)
                beat = self.packets.payload.data
                with m.If(self.packets.valid):
                    for i in range(beats):
                        with m.If(received == i):
                            sync += iu.word_select(i, 8 * width).eq(beat)
                    with m.If(received <= beats):
                        sync += received.eq(received + 1)
                    with m.If(self.packets.payload.last):
                        m.next = "KEY"
            with m.State("KEY"):
                # The key, registered before the 32 slots compare their tags with it: from the
                # IU's bytes through its decode and the key's select into the compares was the
                # ss clock's critical path on ECPIX-5 (120.22 MHz, nextpnr seed 3; issue 44
                # item 7). An IU takes a cycle more.
                sync += key_r.eq(key)
                m.next = "LOOKUP"
            with m.State("LOOKUP"):
                function = iu_bytes(uas.TASK_OFFSETS["function"])
                sync += [
                    match_q.eq(Cat(*((tags[i] == key_r) & queued[i] for i in range(depth)))),
                    match_r.eq(Cat(*((tags[i] == key_r) & running[i] for i in range(depth)))),
                    free.eq(~(queued | running)), slot.eq(first_free),
                    # The IU's decode, registered for DECIDE (from the IU's bytes through the
                    # decode into the slots and the count of outstanding commands was an ss
                    # timing path on ECPIX-5, issue 44 item 7).
                    decoded.command.eq(is_command), decoded.task.eq(is_task),
                    decoded.lun_bad.eq(lun != 0),
                    decoded.abort.eq(function == uas.TaskFunction.ABORT_TASK),
                    decoded.lu_reset.eq(function == uas.TaskFunction.LOGICAL_UNIT_RESET),
                    decoded.bad_tag.eq(tag_bad)]
                m.next = "DECIDE"
            with m.State("DECIDE"):
                # A take since LOOKUP moved a slot from queued to running: that changes nothing
                # a COMMAND IU is judged by (a tag outstanding either way, the same free
                # slots), only an ABORT TASK's answer, so only that looks up again. No take
                # happens while an abort is decided (``abort_deciding`` holds the engine off),
                # so this is from flip-flops: neither a command's store nor the slots' next
                # state waits on the engine's ``take`` (ss timing paths on ECPIX-5).
                retake = took & decoded.task & decoded.abort & ~decoded.lun_bad
                with m.If(retake):
                    m.next = "LOOKUP"
                # A reply may be needed: one place must be free.
                with m.Elif(count < REPLIES_DEPTH):
                    m.next = "RECEIVE"
                    # (The IU's bytes stay: the next IU overwrites those its length reaches.)
                    sync += received.eq(0)
                    with m.If(decoded.bad_tag):
                        sync += self.bad_tag.eq(1)  # dropped (the module docstring says why)
                    with m.Elif(decoded.command):
                        with m.If((match_q | match_r).any()):
                            reply(iu_tag, code=uas.ResponseCode.OVERLAPPED_TAG)
                            sync += self.overlapped.eq(1)
                        with m.Elif(~free.any()):
                            reply(iu_tag, full=1)
                            sync += self.task_set_full.eq(1)
                        with m.Else():
                            sync += [store.eq(0),
                                     lun_bad.bit_select(slot, 1).eq(decoded.lun_bad)]
                            for i in range(depth):
                                with m.If(slot == i):
                                    sync += tags[i].eq(iu_tag)
                            m.next = "STORE"
                    with m.Elif(decoded.task):
                        with m.If(decoded.lun_bad):
                            reply(iu_tag, code=uas.ResponseCode.INCORRECT_LUN)
                        with m.Elif(decoded.abort):
                            with m.If(match_r.any()):
                                reply(iu_tag, code=uas.ResponseCode.TMF_FAILED)
                            with m.Else():
                                reply(iu_tag, code=uas.ResponseCode.TMF_COMPLETE)
                                m.d.comb += dequeue.eq(match_q)
                                sync += self.aborted.eq(match_q.any())
                        with m.Elif(decoded.lu_reset):
                            reply(iu_tag, code=uas.ResponseCode.TMF_COMPLETE)
                            m.d.comb += dequeue.eq(queued)
                            m.d.comb += reset_lu.eq(1)
                            sync += [self.aborted.eq(queued.any()), self.clear_sense.eq(1)]
                        with m.Else():
                            reply(iu_tag, code=uas.ResponseCode.TMF_NOT_SUPPORTED)
                    with m.Else():
                        reply(iu_tag, code=uas.ResponseCode.INVALID_INFO_UNIT)
            with m.State("STORE"):
                # The CDB into the slot's place in the RAM, a beat a cycle.
                cdb_first = uas.COMMAND_OFFSETS["cdb"] // width
                m.d.comb += [write.en.eq(1), write.addr.eq(slot * beats_per_cdb + store),
                             write.data.eq(iu.word_select(cdb_first + store, 8 * width))]
                sync += store.eq(store + 1)
                with m.If(store == beats_per_cdb - 1):
                    m.d.comb += enqueue.bit_select(slot, 1).eq(1)
                    m.next = "RECEIVE"

        # -- the engine's side: round robin from the slot after the last one taken
        # ``after`` is kept as the mask of the slots from the one after the last taken up (a
        # flip-flop a slot), and each choice is a tree (``first_set``): the two 32-way priority
        # chains this replaced were the ECPIX-5's worst ``ss`` path (118.72 MHz of 125).
        after = Signal(depth, init=(1 << depth) - 1)
        later = Signal(depth)
        m.d.comb += later.eq(queued & after)
        any_later, first_later = first_set(m, later, name="later")
        any_queued, first_queued = first_set(m, queued, name="queued")
        chosen = Signal(range(depth))
        m.d.comb += chosen.eq(Mux(any_later, first_later, first_queued))
        # The choice is registered (with its slot as a one-hot mask), and whether the current
        # slot is still queued is a flip-flop kept from the slots' next state: no 32-way
        # multiplexer of ``queued`` by ``current`` sits before the engine's ``take`` (the
        # ECPIX-5 default seed's ss path after the trees, 117.87 MHz). The choice is a cycle
        # old when taken; a slot aborted since is caught in LOAD, as one aborted during it is.
        m.d.comb += abort_deciding.eq(ingest.ongoing("DECIDE") & decoded.task & decoded.abort)
        chosen_r, chosen_any = Signal(range(depth)), Signal()
        chosen_mask, current_mask = Signal(depth), Signal(depth)
        sync += [chosen_r.eq(chosen), chosen_any.eq(any_queued),
                 chosen_mask.eq(Cat(*(chosen == i for i in range(depth))))]
        current = Signal(range(depth))
        current_queued = Signal()
        next_mask, queued_next = Signal(depth), Signal(depth)
        m.d.comb += next_mask.eq(current_mask)
        loaded = Signal(range(beats_per_cdb + 1))
        with m.FSM(domain="usb", name="select"):
            with m.State("SELECT"):
                with m.If(chosen_any):
                    sync += [current.eq(chosen_r), loaded.eq(0)]
                    m.d.comb += next_mask.eq(chosen_mask)
                    m.next = "LOAD"
            with m.State("LOAD"):
                # Read the slot's CDB a beat a cycle (the RAM answers a cycle later).
                m.d.comb += read.addr.eq(current * beats_per_cdb + loaded)
                sync += loaded.eq(loaded + 1)
                with m.If(loaded != 0):
                    beat = (loaded - 1)[:max(1, (beats_per_cdb - 1).bit_length())]
                    sync += self.cdb.word_select(beat, 8 * width).eq(read.data)
                with m.If(~current_queued):
                    m.next = "SELECT"  # aborted while it loaded (or before)
                with m.Elif(loaded == beats_per_cdb):
                    m.next = "READY"
            with m.State("READY"):
                m.d.comb += [self.command_valid.eq(current_queued & ~abort_deciding),
                             self.tag.eq(Cat(*tags).word_select(current, 16)),
                             self.lun_bad.eq(lun_bad.bit_select(current, 1))]
                with m.If(~current_queued):
                    m.next = "SELECT"
                with m.Elif(self.take & ~abort_deciding):
                    m.d.comb += take.eq(current_mask)
                    # The slots above ``current``, or all of them after the last.
                    sync += after.eq(Mux(current == depth - 1, (1 << depth) - 1,
                                         Const((1 << depth) - 2, depth) << current))
                    m.next = "RUNNING"
            with m.State("RUNNING"):
                m.d.comb += [self.tag.eq(Cat(*tags).word_select(current, 16)),
                             self.lun_bad.eq(lun_bad.bit_select(current, 1))]
                with m.If(self.done):
                    m.d.comb += finish.eq(current_mask)
                    m.next = "SELECT"

        # ``current_queued`` needs no ``take``: the slot taken is the current one, and it is
        # looked at again only after SELECT has chosen another.
        m.d.comb += queued_next.eq((queued | enqueue) & ~dequeue)
        sync += [current_mask.eq(next_mask), current_queued.eq((queued_next & next_mask).any())]
        sync += [queued.eq(queued_next & ~take),
                 running.eq((running | take) & ~finish)]
        sync += took.eq(take.any())
        # Commands in the slots: one in with each stored, one out with each done or aborted; a
        # LOGICAL UNIT RESET leaves only the one executing. Counted a cycle later, from
        # registered strobes (a timing path on ECPIX-5): ``running`` is then the slots after
        # the reset (no slot is taken in a cycle that decides an IU).
        counted = Signal(4)
        sync += counted.eq(Cat(enqueue.any(), finish.any(), dequeue.any(), reset_lu))
        with m.If(counted[3]):
            sync += self.outstanding.eq(running.any())
        with m.Else():
            sync += self.outstanding.eq(self.outstanding + counted[0] - counted[1]
                                        - counted[2])
        return m
