"""What a UAS device takes beyond the protocol's answers (:class:`UasDevice`): the ideal one
of the ceiling, and busprobe's ``usb3-storage`` engine as the simulation of its gateware shows it
(:mod:`.usb3_uas` steps a run with either)."""

from __future__ import annotations

from dataclasses import dataclass

from .usb3 import PIPE_CLOCK_HZ

__all__ = ["UasDevice", "IDEAL_DEVICE", "BUSPROBE_DEVICE", "CYCLE"]

#: One PIPE cycle (125 MHz, 4 symbols on each lane), seconds.
CYCLE = 1 / PIPE_CLOCK_HZ


@dataclass(frozen=True)
class UasDevice:
    """What a device takes beyond the protocol's answers, in PIPE cycles.

    Attributes
    ----------
    decode : int
        From the COMMAND IU's ACK to its first data beat (a read's ERDY goes with it).
    bytes_per_cycle : int
        The rate at which a data-in packet is filled (0: at once); its first packet is sent
        once whole, ``send`` cycles later.
    after_last : int
        A write's SENSE this long after the end of its ACK of the last data packet (the
        host's ACK TP asking for it there already).
    status_erdy : int
        A write's status stream selected (ERDY) this long after its last data packet starts
        on the lane: the host's answer overlaps that packet and its ACK.
    sense_after : int
        A read's SENSE this long after its data are all in the data-in ring.
    answer_in, answer_out : int
        Beyond the protocol's answers (``usb3.DEVICE_RESPONSE_CYCLES``): a data packet (a
        data-in one, the SENSE IU) after the ACK TP asking for it; an ACK TP or NRDY after the
        packet it answers.
    host_tp_gap : int
        Idle cycles the host leaves after each transaction packet it sends the device (a
        receiver that loses a header packet right behind another needs them).
    commands_first : bool
        Its link commands go ahead of a packet it has queued: a SENSE IU behind a data-in
        train follows the LGOOD and LCRD of the status stream's ACK TP that came during it.
    next_in : int
        From the end of the host's ACK of a data-in stream's last packet to its ERDY for the
        data pipe's next stream: it learns that the stream ended through its receive path,
        and the link commands and packets due go first.
    pipe_out_decode : int or None
        A write's ``decode`` when the host primed its pipes with the Prime Stream ID, with no
        named prime to answer first (None: ``decode``).
    pipe_last_ack : int or None
        With the pipes primed so: its ACK of a write's last data packet, beyond the protocol's
        answer (None: ``answer_out``).
    """

    name: str
    decode: int = 0
    bytes_per_cycle: int = 0
    after_last: int = 0
    status_erdy: int = 0
    sense_after: int = 0
    send: int = 0
    answer_in: int = 0
    answer_out: int = 0
    host_tp_gap: int = 0
    commands_first: bool = False
    next_in: int = 0
    pipe_out_decode: int | None = None
    pipe_last_ack: int | None = None

    def last_ack(self, pipe_primes: bool) -> int:
        """Cycles beyond the protocol's answer to its ACK of a write's last data packet."""
        if pipe_primes and self.pipe_last_ack is not None:
            return self.pipe_last_ack
        return self.answer_out

    def decode_for(self, reading: bool, pipe_primes: bool) -> int:
        """Cycles from the COMMAND IU's ACK to the first data beat (or a write's ERDY)."""
        if pipe_primes and not reading and self.pipe_out_decode is not None:
            return self.pipe_out_decode
        return self.decode

    def fill(self, length: int) -> float:
        """Seconds to fill ``length`` bytes."""
        return length / self.bytes_per_cycle * CYCLE if self.bytes_per_cycle else 0.0


#: Never the bottleneck: the ceiling's device.
IDEAL_DEVICE = UasDevice("ideal")
#: busprobe's ``usb3-storage`` (``gateware/common/uas_engine.py``, a word a cycle): the IU's
#: decode 27-28 cycles after its ACK, then the first beat in the data-in ring and the ERDY with it
#: (``BurstInEndpoint``'s tagged announcement), the packet whole 256 cycles later and on the lane
#: 5 after that; a write's SENSE at its last data packet's ACK (the check reads that packet
#: beside it), its status stream selected as that packet starts (``UasEngine.status_soon``,
#: since 2026-12-06: the ERDY 24 cycles after the packet's first symbol, the SENSE IU 13 after
#: the end of its ACK, the least of the link traces of ``small-burst``'s 1 and 4 KiB × QD 4
#: writes). On its link, LUNA's: one idle cycle the host leaves after each TP the device
#: receives (``sim/usb3/link.py``'s ``LUNA_HEADER_GAP_SYMBOLS``), link commands
#: ahead of a queued packet; and its four-endpoint storage design answers 2 cycles later than
#: the measured ``DEVICE_RESPONSE_CYCLES`` of the two-endpoint one on OUT (13-15 seen), 3 on
#: the SENSE IU (28-30 seen after its ACK TP; 2 since 2026-12-06, when the IN endpoints began
#: staging their next packet: the SENSE IU and a data packet 2 cycles sooner after the ACK TP
#: asking for it, 24 and 22 cycles strictly between the two in the link trace of 1 KiB reads at
#: queue depth 4 behind ``ideal``, and ``DEVICE_RESPONSE_CYCLES["in"]`` 1 lower). Each the
#: least the link trace
#: (``BUSPROBE_LINK_TRACE``) of the simulation showed, 2026-12-04, the decode from the ACK's
#: last symbol to the ERDY's first (26 on writes, 27 on reads; a cycle more since the task set
#: registers its key, 2026-12-05: 27 and 28, in 1,110 commands behind ``ideal``, 1 KiB and
#: 4 KiB at queue depth 1; less only where the ACK itself went late); the UAS sweep tests fail if
#: the gateware answers faster (a point above its bound) or much slower (not within 1 %).
#: Until 2026-12-06 LUNA's transmitter also left two idle cycles after each TP the engine sent;
#: since then (``gateware/usb3/chained_packets.py``) a packet waiting behind it follows at once
#: when no link command waits, so the model counts none.
#: A read's next data stream: its ERDY 17 cycles after the host's ACK of the last packet ends
#: where the model puts it (the least of some 1,100 stream switches in the link traces of 1 KiB
#: and 4 KiB reads at queue depth 1-8 behind each shipped profile, 2026-12-05). A write's
#: comes 14-16 cycles after the device's own last ACK in such traces, but that is no bound:
#: counted, 256 KiB × QD 4 writes behind ``small-burst`` read above it.
#: Since 2026-12-05 (fifteenth session) a read's SENSE waits, while the next command's data (a
#: one-packet transfer) are buffered, for the host's ACK of its last packet and that stream's ERDY
#: (``Usb3StorageDevice``'s grant): only later than the model's, so the bound still holds; the
#: stepped schedule keeps it at ``sense_after`` (early for queued reads).
#: With the pipes primed by the Prime Stream ID (``sim:usb3?primes=pipe``, 2026-12-05, sixteenth
#: session) a write's ERDY comes 26 cycles after the last symbol of the IU's ACK (130 of 132
#: commands, 4 KiB at queue depth 1 behind ``ideal``; 27 the others; 25 after the cycle the
#: model ends a packet in), a read's 29; and the ACK of a write's last data packet 13 cycles
#: after the packet's last symbol (the protocol's answer, ``DEVICE_RESPONSE_CYCLES``): with
#: named primes the model's other answers are a cycle or two early (a write's SENSE behind
#: ``ideal`` 31 cycles after the host's Start Stream where it takes 28, the least of
#: ``small-burst``'s), which the 2 cycles of ``answer_out`` there offset; with the pipe primed
#: nothing does (4 KiB writes at queue depth 1 read up to 0.04 % above the bound with them).
BUSPROBE_DEVICE = UasDevice("busprobe usb3-storage", decode=27, bytes_per_cycle=4,
                            after_last=13, status_erdy=24, sense_after=2, send=5,
                            answer_in=2, answer_out=2,
                            host_tp_gap=1,
                            commands_first=True, next_in=17, pipe_out_decode=25,
                            pipe_last_ack=0)
