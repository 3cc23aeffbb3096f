"""Python side of the PIPE link partner (``sim/hdl/pipe_partner.sv``): whole packets in and out.

The partner does every per-symbol step inside the simulator (scrambling, SKP insertion and
removal, framing, ordered-set recognition). This driver sets what the partner transmits (an
ordered set repeated, LFPS, or queued blocks of framed symbols) and pops what it captured, so
Python runs once per packet or training step, never once per clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from cocotb.triggers import First, Lock, Timer, ValueChange

from ..clocked import ClockedDriver

__all__ = ["CLOCK_HZ", "CLOCK_PERIOD_PS", "SYMBOLS_PER_CYCLE", "HostMode", "CaptureType",
           "Capture", "OrderedSet", "PipePartnerDriver", "TSEQ", "TS1", "TS2"]

#: The PIPE clock of a 32-bit SuperSpeed PIPE: 5 GT/s, 8b/10b, four symbols a cycle.
CLOCK_HZ = 125_000_000
CLOCK_PERIOD_PS = 8_000
SYMBOLS_PER_CYCLE = 4
MAX_BLOCK = 1088  # pipe_partner.sv's MAX_BLOCK: a DPH + a 1024-byte DPP, framed, fits
MAX_CAPTURE = 1040
BLOCKS = 8  # pipe_partner.sv's BLOCKS: the block queue's slots


class HostMode(IntEnum):
    """What the partner transmits (pipe_partner.sv MODE_*)."""
    QUIET = 0
    ORDERED_SET = 1
    LINK = 2


class CaptureType(IntEnum):
    """A captured device packet's framing (pipe_receiver.sv CAP_*)."""
    HEADER = 1
    COMMAND = 2
    DATA = 3
    DATA_NULLIFIED = 4


@dataclass(frozen=True)
class OrderedSet:
    """An ordered set as LUNA's TS emitters send it: 32-bit words and their K masks."""
    name: str
    words: tuple[int, ...]
    kmasks: tuple[int, ...]
    #: Bits of each word the recogniser compares (TS2's link configuration byte varies).
    masks: tuple[int, ...]


def _luna_set(name: str, data: list[int], first_k: int, config_word: int | None = None
              ) -> OrderedSet:
    # LUNA's TS2 detector compares the upper half of word 1 only (symbols 6, 7).
    masks = tuple(0xFFFF0000 if i == config_word else 0xFFFFFFFF
                  for i in range(len(data)))
    return OrderedSet(name, tuple(data), (first_k,) + (0,) * (len(data) - 1), masks)


def _ordered_sets() -> tuple[OrderedSet, OrderedSet, OrderedSet]:
    # LUNA's one definition of the training sets (link/ordered_sets.py), USB 3.2 §6.4.1.
    from luna.gateware.usb.usb3.link import ordered_sets as luna

    return (_luna_set("TSEQ", luna.TSEQ_SET_DATA, 0b0001),
            _luna_set("TS1", luna.TS1_SET_DATA, 0b1111, config_word=1),
            _luna_set("TS2", luna.TS2_SET_DATA, 0b1111, config_word=1))


TSEQ, TS1, TS2 = _ordered_sets()


@dataclass
class Capture:
    """A packet the device transmitted, as the partner framed it.

    Attributes
    ----------
    kind : CaptureType
    data : bytes
        Header: 16 bytes (header, CRC-16, link control word); link command: 4 bytes; data: the
        payload followed by its CRC-32.
    start, end : int
        Cycles of its first framing symbol and of its last symbol on the device's transmit bus.
    """

    kind: CaptureType
    data: bytes
    start: int
    end: int


class PipePartnerDriver(ClockedDriver):
    """Drives the model side of ``usb3_sim_top``.

    Parameters
    ----------
    dut : cocotb handle
        The ``usb3_sim_top`` instance.
    """

    period_ps = CLOCK_PERIOD_PS

    def __init__(self, dut: object) -> None:
        super().__init__(dut)
        self._blk_request = 0
        self._cmd_request = 0
        self._cap_pop = 0
        # The partner takes at most one request a cycle on each lane and reads the request's
        # registers when the counter moved, so a second write in the same cycle overwrites the
        # first and one packet or link command is silently lost. Several coroutines write
        # (the link's receive loop its LGOODs, a delayed LCRD of its own, the host controller
        # its headers, a retry its LRTY): each lane lets one at a time through.
        self._blk_lock = Lock()
        self._cmd_lock = Lock()

    async def start(self) -> None:
        """Start the clock, set up the recognisers, hold the design in reset for a few cycles."""
        dut = self.dut
        self._start_clock()
        dut.rst.value = 1
        dut.vbus.value = 0
        dut.host_mode.value = HostMode.QUIET
        dut.lfps_mode.value = 0
        dut.lfps_burst.value = 0
        dut.lfps_period.value = 1
        dut.blk_request.value = 0
        dut.cmd_request.value = 0
        dut.flush.value = 0
        dut.cmd_symbols.value = 0
        dut.cmd_k.value = 0
        dut.blk_len.value = 0
        dut.blk_start_at.value = 0
        dut.cap_pop.value = 0
        dut.os_words.value = 4
        dut.os_word.value = 0
        dut.os_k.value = 0
        word = mask = kmask = lengths = 0
        for index, ordered_set in enumerate((TSEQ, TS1, TS2)):
            for i, (w, k, m) in enumerate(zip(ordered_set.words, ordered_set.kmasks,
                                              ordered_set.masks, strict=True)):
                word |= w << (256 * index + 32 * i)
                mask |= m << (256 * index + 32 * i)
                kmask |= k << (32 * index + 4 * i)
            lengths |= len(ordered_set.words) << (4 * index)
        dut.rec_word.value = word
        dut.rec_mask.value = mask
        dut.rec_k.value = kmask
        dut.rec_words.value = lengths
        await self._release_reset()
        self._blk_request = 0
        self._cmd_request = 0
        self._cap_pop = 0

    # -- what the partner transmits ----------------------------------------------------------

    def set_vbus(self, present: bool) -> None:
        self.dut.vbus.value = int(present)

    def send_lfps(self, burst_cycles: int, period_cycles: int) -> None:
        """Repeat LFPS bursts of ``burst_cycles`` every ``period_cycles``."""
        self.dut.lfps_burst.value = burst_cycles
        self.dut.lfps_period.value = period_cycles
        self.dut.lfps_mode.value = 1

    def hold_lfps(self) -> None:
        """Drive LFPS continuously (a Warm Reset's long burst)."""
        self.dut.lfps_mode.value = 2

    def stop_lfps(self) -> None:
        self.dut.lfps_mode.value = 0

    @property
    def lfps_sent(self) -> int:
        return int(self.dut.lfps_sent.value)

    @property
    def device_lfps_bursts(self) -> int:
        return int(self.dut.dev_lfps_bursts.value)

    def send_ordered_set(self, ordered_set: OrderedSet, config: int = 0) -> None:
        """Transmit ``ordered_set`` back to back; ``config`` is TS1/TS2's link configuration."""
        words = list(ordered_set.words)
        if ordered_set is not TSEQ:
            words[1] |= (config & 0xFF) << 8  # symbol 5: Link Configuration (USB 3.2 §6.4.1.2)
        self.dut.os_word.value = sum(w << (32 * i) for i, w in enumerate(words))
        self.dut.os_k.value = sum(k << (4 * i) for i, k in enumerate(ordered_set.kmasks))
        self.dut.os_words.value = len(words)
        self.dut.host_mode.value = HostMode.ORDERED_SET

    def set_mode(self, mode: HostMode) -> None:
        self.dut.host_mode.value = mode

    @property
    def ordered_sets_sent(self) -> int:
        return int(self.dut.os_sent.value)

    def received_sets(self, ordered_set: OrderedSet) -> tuple[int, int]:
        """(consecutive, total) complete sets of ``ordered_set`` received from the device."""
        index = (TSEQ, TS1, TS2).index(ordered_set)
        run = int(self.dut.rec_run.value) >> (16 * index) & 0xFFFF
        total = int(self.dut.rec_total.value) >> (32 * index) & 0xFFFF_FFFF
        return run, total

    @property
    def received_idle_symbols(self) -> int:
        """Consecutive logical idle symbols (descrambled D0.0) just received."""
        return int(self.dut.rx_idle_run.value)

    async def queue(self, symbols: bytes, kmask: int = 0, start_at: int = 0) -> None:
        """Queue framed symbols (``kmask`` bit i: symbol i is a K symbol) to go out in LINK mode
        not before cycle ``start_at``; waits while the partner's block queue is full.

        The block is padded with logical idle to a whole word, as LUNA's own transmitter sends.
        """
        if len(symbols) > MAX_BLOCK:
            raise ValueError(f"block of {len(symbols)} symbols exceeds {MAX_BLOCK}")
        dut = self.dut
        symbols = symbols + bytes(-len(symbols) % SYMBOLS_PER_CYCLE)
        async with self._blk_lock:
            while int(dut.blk_free.value) == 0:
                await ValueChange(dut.blk_done)
            dut.blk_symbols.value = int.from_bytes(symbols, "little")
            dut.blk_k.value = kmask
            dut.blk_len.value = len(symbols)
            dut.blk_start_at.value = start_at
            self._blk_request += 1
            dut.blk_request.value = self._blk_request & 0xFFFF_FFFF
            await self._taken(dut.blk_taken, self._blk_request)

    async def wait_backlog(self, blocks: int) -> None:
        """Wait until at most ``blocks`` blocks (the one on the wire included) are queued."""
        while BLOCKS - int(self.dut.blk_free.value) > blocks:
            await ValueChange(self.dut.blk_done)

    async def send_command(self, symbols: bytes, kmask: int) -> None:
        """Queue an 8-symbol link command on the command lane: it goes out at the next packet
        boundary, ahead of queued blocks."""
        dut = self.dut
        async with self._cmd_lock:
            while int(dut.cmd_free.value) == 0:
                await ValueChange(dut.cmd_done)
            dut.cmd_symbols.value = int.from_bytes(symbols, "little")
            dut.cmd_k.value = kmask
            self._cmd_request += 1
            dut.cmd_request.value = self._cmd_request & 0xFFFF_FFFF
            await self._taken(dut.cmd_taken, self._cmd_request)

    @staticmethod
    async def _taken(taken: object, request: int) -> None:
        """Wait until the partner took ``request``.

        The partner reads a request's registers at the clock edge after the counter moved. A
        fixed one-cycle wait is not enough: a timer ending in the time step of a clock edge
        may run before that edge is evaluated, and the next writer's registers then replace
        an untaken request, whose packet or link command is silently lost (a lost header
        packet put LUNA's device in Recovery: "header sequence 2, expected 1", seen by the
        host as "no header credit").
        """
        while int(taken.value) != request & 0xFFFF_FFFF:
            await ValueChange(taken)

    async def flush(self) -> None:
        """Drop every queued block and link command (a port reset forgets them)."""
        self.dut.flush.value = 1
        await Timer(2 * CLOCK_PERIOD_PS, "ps")
        self.dut.flush.value = 0
        await Timer(CLOCK_PERIOD_PS, "ps")

    @property
    def blocks_done(self) -> int:
        return int(self.dut.blk_done.value)

    @property
    def commands_done(self) -> int:
        """Link commands the partner has sent from its command lane."""
        return int(self.dut.cmd_done.value)

    @property
    def last_block_end(self) -> int:
        """Cycle the last fully sent block's final word went out."""
        return int(self.dut.blk_last_end.value)

    # -- what the device transmitted ---------------------------------------------------------

    @property
    def pending(self) -> int:
        """Captured device packets not popped yet."""
        return (int(self.dut.cap_count.value) - self._cap_pop) & 0xFFFF_FFFF

    async def capture(self, timeout_cycles: int) -> Capture | None:
        """The next device packet, or None if none was framed within ``timeout_cycles``."""
        dut = self.dut
        if self.pending == 0:
            timer = Timer(max(timeout_cycles, 1) * CLOCK_PERIOD_PS, "ps")
            while self.pending == 0:
                if await First(ValueChange(dut.cap_count), timer) is timer:
                    return None
        while int(dut.cap_index.value) != self._cap_pop & 0xFFFF_FFFF:
            await Timer(CLOCK_PERIOD_PS, "ps")
        if int(dut.cap_overflow.value):
            raise RuntimeError("PIPE partner capture FIFO overflowed: the host model fell behind")
        length = int(dut.cap_len.value)
        raw = dut.cap_data._handle.get_signal_val_binstr()  # one wide read; LogicArray is slower
        value = int(raw[len(raw) - 8 * length:], 2) if length else 0
        capture = Capture(CaptureType(int(dut.cap_type.value)), value.to_bytes(length, "little"),
                          int(dut.cap_start.value), int(dut.cap_end.value))
        self._cap_pop += 1
        dut.cap_pop.value = self._cap_pop & 0xFFFF_FFFF
        return capture

    def discard_captures(self) -> None:
        """Forget every captured packet (after a reset)."""
        self._cap_pop = int(self.dut.cap_count.value)
        self.dut.cap_pop.value = self._cap_pop

    @property
    def symbols_sent(self) -> int:
        """Symbols the partner put on the device's receive bus (SKP included)."""
        return int(self.dut.symbols_in.value)

    @property
    def symbols_received(self) -> int:
        """Symbols the device transmitted outside electrical idle (SKP included)."""
        return int(self.dut.symbols_out.value)

    @property
    def skp_received(self) -> int:
        """SKP symbols the device transmitted (a Gen 1 SKP ordered set is two)."""
        return int(self.dut.skp_out.value)
