"""The host port's SuperSpeed link layer in U0: header flow control over the PIPE partner.

What :class:`SuperSpeedLink` does, as a downstream port must (USB 3.2 §7.2.4):

* advertisement on entering U0: LGOOD_7 (the header sequence number before 0) and LCRD_A..D
  (four header buffers), and it waits for the device's own;
* every header packet it sends takes one of the device's header credits (blocked while none is
  left, and that wait is counted as a *credit stall*), carries the next sequence number and is
  kept until the device's LGOOD_n retires it, strictly in order (an LGOOD out of sequence is a
  :class:`LinkError`: a port would go to Recovery); an LBAD makes it send LRTY and resend every
  unretired header (Delayed bit set), data payloads with them;
* every header packet it receives is checked (CRC-16, CRC-5, sequence); a good one is answered
  with LGOOD_n at once and LCRD_x after ``credit_return_cycles`` (the host's header buffer
  latency), a bad one with LBAD; the packet and its data payload go up to the protocol layer;
* a keep-alive (LDN) when it sent nothing for ``keepalive_cycles`` (USB 3.2 §7.5.6.1 asks for
  one within 10 µs; LUNA's device goes to Recovery after 1 ms without).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import cocotb
from cocotb.triggers import Event, First, Lock, Timer

from .framing import (
    HeaderPacket,
    HeaderPacketType,
    LinkCommand,
    attach_payload,
    frame_command,
    frame_header,
    parse_command,
    parse_header,
)
from .link_trace import LinkTrace
from .pipe import CLOCK_HZ, CLOCK_PERIOD_PS, CaptureType, PipePartnerDriver

__all__ = ["SuperSpeedLink", "LinkCounters", "LinkError", "HEADER_BUFFERS"]

#: Header buffers (credits) each side advertises (USB 3.2 §7.2.4.1.x: four, LCRD_A..D).
HEADER_BUFFERS = 4
#: Idle symbols after a header packet sent without a payload. LUNA's HeaderPacketReceiver
#: (link/receiver.py) spends the cycle after a header's last word in CHECK_PACKET without looking
#: at its input, so a header packet that follows another back to back (legal, USB 3.2 §7.2.1) is
#: lost and never LGOODed. One idle word keeps the next HPSTART out of that cycle. The only place
#: the model bends to the device; costs line time only on the host -> device lane.
LUNA_HEADER_GAP_SYMBOLS = 4
#: A header waiting this long for a credit means the device stopped returning them: 1 ms, the
#: time after which a port without link traffic goes to Recovery (USB 3.2 §7.5.6.1).
CREDIT_TIMEOUT_CYCLES = CLOCK_HZ // 1000
#: Keep-alive interval: a link command within 10 µs of idle (USB 3.2 §7.5.6.1, LUNA's timer).
KEEPALIVE_S = 10e-6


class LinkError(AssertionError):
    """The link did not behave (advertisement missing, sequence lost, capture FIFO overrun)."""


@dataclass
class LinkCounters:
    """What the link layer saw and did; the fault tests and the telemetry cross-check read it."""

    headers_sent: int = 0
    headers_resent: int = 0
    headers_received: int = 0
    bad_headers: int = 0
    bad_payloads: int = 0
    bad_commands: int = 0
    lbad_received: int = 0
    lrty_received: int = 0
    credit_stall_cycles: int = 0
    credit_stalls: int = 0
    keepalives: int = 0
    commands: dict[str, int] = field(default_factory=dict)


class SuperSpeedLink:
    """Host-side link layer over a :class:`PipePartnerDriver` already in U0.

    Parameters
    ----------
    partner : PipePartnerDriver
    credit_return_cycles : int
        Cycles from receiving a good header to returning its LCRD (the host's buffer latency).
    on_header : callable
        Called with every good :class:`HeaderPacket` received (payload attached), in order.
    """

    def __init__(self, partner: PipePartnerDriver, *, credit_return_cycles: int = 0,
                 on_header: Callable[[HeaderPacket], None] | None = None) -> None:
        self.partner = partner
        self.credit_return_cycles = credit_return_cycles
        self.on_header = on_header or (lambda header: None)
        self.counters = LinkCounters()
        self.keepalive_cycles = round(KEEPALIVE_S * CLOCK_HZ)
        self._tx_sequence = 0
        self._rx_sequence = 0
        self._credits = 0
        self._next_credit_in = 0
        self._next_credit_out = 0
        self._unretired: deque[tuple[int, tuple, bytes | None]] = deque()
        self._credit_event = Event()
        # Headers take their sequence number and their place on the lane together: with two
        # senders (the IN and the OUT endpoint at once) a number taken by one while the other
        # queued first would reach the device out of order, and it would go to Recovery.
        self._send_lock = Lock()
        self._advertised = Event()
        self._pending_data: HeaderPacket | None = None
        self._last_sent = 0
        self._lbad_pending = False
        #: Fault injection: the next this many header packets go out with a broken CRC-16.
        self.corrupt_headers = 0
        #: Fault injection: the next this many transaction packets from the device (ACK TPs,
        #: NRDY, ERDY) are taken as arriving with a broken CRC-16: the port answers LBAD.
        self.corrupt_received_tps = 0
        self._task = None
        #: Header packets each way, to a file, when ``BUSPROBE_LINK_TRACE`` names one.
        self.trace = LinkTrace.from_environment()

    # -- start-up ----------------------------------------------------------------------------

    async def start(self, timeout_cycles: int = 50_000) -> None:
        """Advertise sequence and credits, start the receive loop, wait for the device's."""
        await self._send_command(LinkCommand.LGOOD, 7)
        for credit in range(HEADER_BUFFERS):
            await self._send_command(LinkCommand.LCRD, credit)
        self._task = cocotb.start_soon(self._receive_loop())
        deadline = self.partner.cycle + timeout_cycles
        while not (self._advertised.is_set() and self._credits == HEADER_BUFFERS):
            if self.partner.cycle > deadline:
                raise LinkError(f"device advertised no header sequence / {self._credits} of "
                                f"{HEADER_BUFFERS} credits within {timeout_cycles} cycles")
            await self.partner.wait_cycles(64)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    # -- sending -----------------------------------------------------------------------------

    async def _send_command(self, command: LinkCommand, subtype: int = 0,
                            start_at: int = 0) -> None:
        framed = frame_command(command, subtype)
        if start_at > self.partner.cycle:
            await self.partner.wait_until(start_at)
        # The command lane: a link command never waits behind queued data packets (a device
        # times out an unacknowledged header after tPendingHP = 3 us, USB 3.2 §7.2.4.1.6).
        await self.partner.send_command(framed.symbols, framed.kmask)
        self._last_sent = self.partner.cycle

    async def send_header(self, dws: tuple[int, int, int], payload: bytes | None = None, *,
                          start_at: int = 0, corrupt_crc32: bool = False) -> int:
        """Send a header packet (with its data payload), taking a credit; returns the cycle it
        was queued at (after any credit stall)."""
        async with self._send_lock:
            return await self._send_header(dws, payload, start_at=start_at,
                                           corrupt_crc32=corrupt_crc32)

    async def _send_header(self, dws: tuple[int, int, int], payload: bytes | None, *,
                           start_at: int, corrupt_crc32: bool) -> int:
        if self._credits == 0:
            stalled = self.partner.cycle
            self.counters.credit_stalls += 1
            deadline = stalled + CREDIT_TIMEOUT_CYCLES
            while self._credits == 0:
                if self.partner.cycle >= deadline:
                    raise LinkError(f"no header credit from the device for "
                                    f"{CREDIT_TIMEOUT_CYCLES} cycles (link left U0?)")
                self._credit_event.clear()
                await First(self._credit_event.wait(),
                            Timer((deadline - self.partner.cycle) * CLOCK_PERIOD_PS, "ps"))
            self.counters.credit_stall_cycles += self.partner.cycle - stalled
        self._credits -= 1
        sequence = self._tx_sequence
        self._tx_sequence = (sequence + 1) % 8
        # A missing LGOOD shows when the next one arrives out of sequence (_on_command); if
        # they stop altogether, eight sequence numbers cannot tell an eighth header waiting
        # from the first. (LUNA's receiver starved its LGOODs on a busy lane until
        # gateware/usb3/link_commands.py; a port's tPendingHP timer would go to Recovery.)
        if len(self._unretired) >= 7:
            waiting = [number for number, _, _ in self._unretired]
            raise LinkError(f"headers {waiting} still wait for their LGOOD")
        self._unretired.append((sequence, dws, payload))
        corrupt = self.corrupt_headers > 0
        self.corrupt_headers -= corrupt
        framed = frame_header(dws, sequence, payload=payload, corrupt_crc16=corrupt,
                              corrupt_crc32=corrupt_crc32)
        gap = b"" if payload is not None else bytes(LUNA_HEADER_GAP_SYMBOLS)
        if self.trace is not None:
            self.trace.sent(max(self.partner.cycle, start_at), dws)
        await self.partner.queue(framed.symbols + gap, framed.kmask, start_at)
        self._last_sent = max(self.partner.cycle, start_at)
        self.counters.headers_sent += 1
        return self.partner.cycle

    # -- receiving ---------------------------------------------------------------------------

    async def _receive_loop(self) -> None:
        partner = self.partner
        while True:
            capture = await partner.capture(self.keepalive_cycles // 2)
            if capture is None:
                if partner.cycle - self._last_sent >= self.keepalive_cycles // 2:
                    self.counters.keepalives += 1
                    await self._send_command(LinkCommand.LDN)
                continue
            if capture.kind == CaptureType.COMMAND:
                await self._on_command(capture.data, capture.start, capture.end)
            elif capture.kind == CaptureType.HEADER:
                await self._on_header(parse_header(capture.data, capture.start, capture.end))
            elif self._pending_data is not None:
                header, self._pending_data = self._pending_data, None
                attach_payload(header, capture.data, capture.end,
                               nullified=capture.kind == CaptureType.DATA_NULLIFIED)
                if not header.payload_crc_ok:
                    self.counters.bad_payloads += 1
                self.on_header(header)

    async def _on_command(self, data: bytes, start: int, end: int) -> None:
        parsed = parse_command(data)
        if parsed is None:
            self.counters.bad_commands += 1
            return
        command, subtype = parsed
        name = command.name
        if self.trace is not None:
            self.trace.command(start, end, name, subtype)
        self.counters.commands[name] = self.counters.commands.get(name, 0) + 1
        if command == LinkCommand.LGOOD:
            if not self._advertised.is_set():
                self._advertised.set()  # the device's sequence advertisement
            elif self._unretired and self._unretired[0][0] == subtype:
                self._unretired.popleft()
            else:
                # LGOODs come in sequence (USB 3.2 §7.2.4.1.3); a port goes to Recovery on
                # another, as LUNA's own transmitter does.
                oldest = self._unretired[0][0] if self._unretired else None
                raise LinkError(f"LGOOD_{subtype} out of sequence (oldest header waiting: "
                                f"{oldest})")
        elif command == LinkCommand.LCRD:
            if subtype != self._next_credit_in:
                raise LinkError(f"LCRD_{'ABCD'[subtype]} out of order "
                                f"(expected {'ABCD'[self._next_credit_in]})")
            self._next_credit_in = (subtype + 1) % HEADER_BUFFERS
            self._credits += 1
            self._credit_event.set()

        elif command == LinkCommand.LBAD:
            self.counters.lbad_received += 1
            await self._retry()
        elif command == LinkCommand.LRTY:
            self.counters.lrty_received += 1
            self._lbad_pending = False

    async def _retry(self) -> None:
        """LBAD: LRTY, then every unretired header again, Delayed set (USB 3.2 §7.2.4.1.4)."""
        # LRTY goes behind the packets already handed to the partner (not on the command lane):
        # the device ignores those after its LBAD and must see LRTY before the retransmissions.
        lrty = frame_command(LinkCommand.LRTY)
        await self.partner.queue(lrty.symbols, lrty.kmask)
        for sequence, dws, payload in list(self._unretired):
            framed = frame_header(dws, sequence, delayed=True, payload=payload)
            gap = b"" if payload is not None else bytes(LUNA_HEADER_GAP_SYMBOLS)
            await self.partner.queue(framed.symbols + gap, framed.kmask)
            self.counters.headers_resent += 1
        self._last_sent = self.partner.cycle

    async def _on_header(self, header: HeaderPacket) -> None:
        if self.corrupt_received_tps and header.crc_ok and not self._lbad_pending \
                and header.type == HeaderPacketType.TRANSACTION:
            self.corrupt_received_tps -= 1
            header = replace(header, crc_ok=False)
        if not header.crc_ok or self._lbad_pending:
            # After an LBAD, every header up to the device's LRTY is ignored (§7.2.4.1.4).
            if not header.crc_ok and not self._lbad_pending:
                self.counters.bad_headers += 1
                self._lbad_pending = True
                await self._send_command(LinkCommand.LBAD)
            return
        if header.sequence != self._rx_sequence:
            raise LinkError(f"header sequence {header.sequence}, expected {self._rx_sequence}")
        self._rx_sequence = (self._rx_sequence + 1) % 8
        self.counters.headers_received += 1
        if self.trace is not None:
            self.trace.received(header.start, header.end, header.dws)
        await self._send_command(LinkCommand.LGOOD, header.sequence)
        credit = self._next_credit_out
        self._next_credit_out = (credit + 1) % HEADER_BUFFERS
        if self.credit_return_cycles:
            cocotb.start_soon(self._send_command(
                LinkCommand.LCRD, credit, start_at=self.partner.cycle + self.credit_return_cycles))
        else:
            await self._send_command(LinkCommand.LCRD, credit)
        if header.type == HeaderPacketType.DATA:
            self._pending_data = header
        else:
            self.on_header(header)
