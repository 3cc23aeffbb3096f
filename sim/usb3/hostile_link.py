"""The hooks of the hostile SuperSpeed link (:mod:`.hostile`): a PIPE partner that corrupts or
drops what the host sends when armed, and a host link layer that can go through Recovery.

Both are subclasses of the well-behaved models: unarmed they send exactly what those send, so
only the hostile tests pay for them (:func:`hostile_session` builds a session with them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import replace

from busprobe.model.usb3_hosts import Usb3HostProfile
from busprobe.protocol import usb3 as contract
from luna.gateware.usb.usb3.physical.coding import SHP

from .controller import SuperSpeedHostController
from .framing import (
    HEADER_SYMBOLS,
    HeaderPacket,
    HeaderPacketType,
    LinkCommand,
    frame_header,
    parse_command,
)
from .link import HEADER_BUFFERS, LUNA_HEADER_GAP_SYMBOLS, LinkError, SuperSpeedLink
from .pipe import TS1, Capture, PipePartnerDriver
from .protocol import SuperSpeedProtocol
from .recovery import recover_to_u0
from .session import Usb3Session

__all__ = ["HostilePartner", "HostileLink", "hostile_session"]

EP_IN = contract.EP_IN & 0x7F


class HostilePartner(PipePartnerDriver):
    """The PIPE partner with two hooks on the host -> device lane, idle unless armed.

    :meth:`corrupt_header` changes the symbols of a header packet block about to be queued;
    :meth:`drop_command` loses the next link command of a kind instead of sending it.
    """

    def __init__(self, dut: object) -> None:
        super().__init__(dut)
        self._mutate: Callable[[bytearray], None] | None = None
        self._skip = 0
        self._with_payload = False
        self._drop: LinkCommand | None = None
        self.dropped: Counter = Counter()
        #: Device packets captured before this cycle are dropped unseen (Recovery: whatever
        #: the device sent from U0 before it is stale once the link is advertised again).
        self.stale_before = 0
        self.stale_captures = 0

    def corrupt_header(self, skip: int, mutate: Callable[[bytearray], None], *,
                       with_payload: bool = False) -> None:
        """Apply ``mutate`` to the framed symbols of the header packet queued after ``skip``
        others (only those carrying a data payload counted when ``with_payload``)."""
        self._mutate, self._skip, self._with_payload = mutate, skip, with_payload

    @property
    def corruption_pending(self) -> bool:
        return self._mutate is not None

    def drop_command(self, command: LinkCommand) -> None:
        self._drop = command

    async def queue(self, symbols: bytes, kmask: int = 0, start_at: int = 0) -> None:
        if self._mutate is not None and symbols[:1] == bytes((SHP.value,)):
            payload = len(symbols) > HEADER_SYMBOLS + LUNA_HEADER_GAP_SYMBOLS
            if payload or not self._with_payload:
                if self._skip:
                    self._skip -= 1
                else:
                    block = bytearray(symbols)
                    self._mutate(block)
                    symbols, self._mutate = bytes(block), None
        await super().queue(symbols, kmask, start_at)

    async def capture(self, timeout_cycles: int) -> Capture | None:
        while True:
            capture = await super().capture(timeout_cycles)
            if capture is None or capture.start >= self.stale_before:
                return capture
            self.stale_captures += 1

    async def send_command(self, symbols: bytes, kmask: int) -> None:
        if self._drop is not None:
            parsed = parse_command(symbols[4:8])
            if parsed is not None and parsed[0] == self._drop:
                self.dropped[self._drop.name] += 1
                self._drop = None
                return
        await super().send_command(symbols, kmask)


class HostileLink(SuperSpeedLink):
    """The host's link layer plus Recovery: :meth:`recover` takes the link through Recovery to
    U0 and redoes the advertisement (USB 3.2 §7.2.4.1.1: LGOOD_n of the last header received,
    LCRD_A..D), then sends again every header the device's advertisement shows it lost."""

    def __init__(self, partner: PipePartnerDriver, **kwargs: object) -> None:
        super().__init__(partner, **kwargs)
        #: The sequence number of the device's last advertisement (its last header received).
        self.device_advertisement: int | None = None
        self.resent_after_recovery = 0
        #: Fault injection: the next this many IN DPs (bulk IN endpoint) are taken as arriving
        #: with a broken CRC-32.
        self.corrupt_received_dpps = 0
        #: Fault injection: the next this many TPs from the device are lost on the wire (their
        #: framing broken: the port never sees them, so it neither LGOODs nor LBADs them).
        self.lose_received_tps = 0
        #: Recoveries after which the device's advertisement did not come or its LCRDs did not
        #: start at LCRD_A, so the host went to Recovery again, as a port must (LUNA's receiver
        #: skipped its advertisement when U0 was left mid-command, docs/DESIGN.md §4.2; the
        #: oracle expects none).
        self.repeated_recoveries = 0
        #: Fault injection: the next device link command of this kind is taken as arriving with
        #: a broken CRC-5 (the port ignores it and counts it in ``bad_commands``).
        self.corrupt_device_command: LinkCommand | None = None
        #: Fault injection: the next this many IN DP headers are taken as arriving broken.
        self.corrupt_received_dphs = 0
        #: While set, an LGOOD out of sequence or an LCRD out of order (a device link command
        #: lost before it) is recorded in :attr:`out_of_order` for the caller to take the link
        #: through Recovery, as a port must (§7.2.4.1.3, .1.7); otherwise it is a LinkError.
        self.recover_on_out_of_order = False
        self.out_of_order: str | None = None
        #: Fault injection: ``(n, action)``: ``action`` is awaited before the header packet of
        #: the n-th data payload the host sends from now (0: the next), with the lane held.
        self.before_payload: tuple[int, Callable[[], Awaitable[None]]] | None = None
        self._readvertising = False
        self._advertisement_broken = False

    def _out_of_order(self, parsed: tuple[LinkCommand, int] | None) -> bool:
        if parsed is None or not self._advertised.is_set():
            return False
        command, subtype = parsed
        if command == LinkCommand.LGOOD:
            return not self._unretired or self._unretired[0][0] != subtype
        return command == LinkCommand.LCRD and subtype != self._next_credit_in

    async def _on_command(self, data: bytes, start: int, end: int) -> None:
        parsed = parse_command(data)
        if parsed is not None and parsed[0] == self.corrupt_device_command:
            self.corrupt_device_command = None
            data = bytes((data[0] ^ 1,)) + data[1:]  # the CRC-5 no longer matches
            parsed = None
        if self.recover_on_out_of_order and not self._readvertising \
                and self._out_of_order(parsed):
            self.out_of_order = f"{parsed[0].name}_{parsed[1]}"
            return
        if self._readvertising and parsed is not None and parsed[0] == LinkCommand.LCRD \
                and parsed[1] != self._next_credit_in:
            self._advertisement_broken = True  # the port goes to Recovery again (recover)
            return
        if parsed is not None and parsed[0] == LinkCommand.LGOOD and not self._advertised.is_set():
            self.device_advertisement = parsed[1]
        await super()._on_command(data, start, end)

    async def _on_header(self, header: HeaderPacket) -> None:
        if self.lose_received_tps and header.type == HeaderPacketType.TRANSACTION:
            self.lose_received_tps -= 1
            return
        if self.corrupt_received_dphs and header.crc_ok and not self._lbad_pending \
                and header.type == HeaderPacketType.DATA and header.field(1, 8, 4) == EP_IN:
            self.corrupt_received_dphs -= 1
            header = replace(header, crc_ok=False)
        await super()._on_header(header)

    async def _send_header(self, dws: tuple[int, int, int], payload: bytes | None, *,
                           start_at: int, corrupt_crc32: bool) -> int:
        if self.before_payload is not None and payload is not None:
            skip, action = self.before_payload
            self.before_payload = (skip - 1, action) if skip else None
            if not skip:
                await action()
        return await super()._send_header(dws, payload, start_at=start_at,
                                          corrupt_crc32=corrupt_crc32)

    @property
    def headers_unacknowledged(self) -> int:
        """Host headers the device has not LGOODed yet."""
        return len(self._unretired)

    def take_payload(self, header: HeaderPacket) -> HeaderPacket:
        """The DP filter :func:`hostile_session` puts in front of the protocol layer."""
        if self.corrupt_received_dpps and header.type == HeaderPacketType.DATA \
                and header.field(1, 8, 4) == EP_IN and header.payload is not None:
            self.corrupt_received_dpps -= 1
            header.payload, header.payload_crc_ok = None, False
            self.counters.bad_payloads += 1
        return header

    async def _forget(self) -> None:
        """The device is out of U0 and cannot be back before the host's idle: from here on
        only its advertisement is news, everything it sent before is dropped unseen. Its
        advertisement can start before the host's Recovery.Idle ends (the device may reach U0
        first), so its LCRDs are checked against LCRD_A.. from here on, not from U0."""
        self.partner.stale_before = self.partner.cycle
        self._readvertising = True

    @property
    def last_sent_sequence(self) -> int:
        return (self._tx_sequence - 1) % 8

    async def recover(self, timeout_cycles: int = 5_000, attempts: int = 3) -> None:
        """Recovery (whoever started it), then the advertisement and the resends. An
        advertisement that does not come within ``timeout_cycles``, or LCRDs that do not start
        at LCRD_A, send the port to Recovery again, up to ``attempts`` times."""
        for _ in range(attempts):
            if await self._recover_once(timeout_cycles):
                break
            self.repeated_recoveries += 1
        else:
            raise LinkError(f"no advertisement after {attempts} Recoveries "
                            f"({self._credits} credits)")
        await self._resend_unretired()

    async def _recover_once(self, timeout_cycles: int) -> bool:
        partner = self.partner
        partner.send_ordered_set(TS1)
        await partner.flush()  # nothing queued before Recovery goes out after it
        # What a port resets in Recovery: credits both ways, a pending LBAD, the advertisement.
        # Until the host's idle, whatever the device sent from U0 is dropped (a late LCRD
        # would count against the new advertisement).
        partner.stale_before = 1 << 62
        self._credits, self._next_credit_in, self._next_credit_out = 0, 0, 0
        self._lbad_pending, self._pending_data = False, None
        self._advertised.clear()
        self.device_advertisement = None
        self._advertisement_broken = False
        try:
            await recover_to_u0(partner, before_idle=self._forget)
            await self._send_command(LinkCommand.LGOOD, (self._rx_sequence - 1) % 8)
            for credit in range(HEADER_BUFFERS):
                await self._send_command(LinkCommand.LCRD, credit)
            deadline = partner.cycle + timeout_cycles
            while not (self._advertised.is_set() and self._credits == HEADER_BUFFERS):
                if partner.cycle > deadline or self._advertisement_broken:
                    return False
                await partner.wait_cycles(16)
            return True
        finally:
            self._readvertising = False

    async def _resend_unretired(self) -> None:
        """Every header after the device's advertisement again, Delayed set (§7.2.4.1.1)."""
        partner = self.partner
        received = self.device_advertisement
        if any(sequence == received for sequence, _, _ in self._unretired):
            while self._unretired.popleft()[0] != received:
                pass
        for sequence, dws, payload in list(self._unretired):
            while self._credits == 0:
                await partner.wait_cycles(16)
            self._credits -= 1
            framed = frame_header(dws, sequence, delayed=True, payload=payload)
            gap = b"" if payload is not None else bytes(LUNA_HEADER_GAP_SYMBOLS)
            await partner.queue(framed.symbols + gap, framed.kmask)
            self.resent_after_recovery += 1


def hostile_session(dut: object, profile: Usb3HostProfile | None = None) -> Usb3Session:
    """A :class:`Usb3Session` whose partner and link are the hostile ones (not powered up)."""
    session = Usb3Session(dut, profile)
    session.partner = HostilePartner(dut)
    session.link = HostileLink(session.partner,
                               credit_return_cycles=session.link.credit_return_cycles)
    session.protocol = SuperSpeedProtocol(session.link)
    deliver, link = session.protocol.deliver, session.link
    link.on_header = lambda header: deliver(link.take_payload(header))
    session.host = SuperSpeedHostController(session.protocol, session.host.profile)
    return session
