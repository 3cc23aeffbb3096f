"""SuperSpeed protocol layer of the host model: transaction packets, data packets, control
transfers (USB 3.2 §8).

Header layouts are LUNA's (``protocol/transaction.py``, ``link/data.py``), which follow USB 3.2
§8.4 / §8.5 / §8.6; type and subtype codes come from usb-protocol.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable

from cocotb.triggers import Event, First, Timer
from usb_protocol.types.superspeed import HeaderPacketType, TransactionPacketSubtype

from .framing import HeaderPacket
from .link import SuperSpeedLink
from .pipe import CLOCK_PERIOD_PS

__all__ = ["SuperSpeedProtocol", "DeviceStall", "DeviceTimeout", "tp_header", "data_header",
           "itp_header", "DIR_IN", "DIR_OUT", "CONTROL_MAX_PACKET"]

DIR_OUT, DIR_IN = 0, 1
#: A SuperSpeed control endpoint's packet size (USB 3.2 §9.6.1: bMaxPacketSize0 = 9, 2^9).
CONTROL_MAX_PACKET = 512
SEQUENCE_MODULO = 32


class DeviceTimeout(AssertionError):
    """The device did not answer within the time a host would wait."""


class DeviceStall(AssertionError):
    """The device answered STALL."""


def tp_header(address: int, subtype: TransactionPacketSubtype, *, endpoint: int = 0,
              direction: int = DIR_OUT, packets: int = 0, sequence: int = 0,
              retry: bool = False, packets_pending: bool = False,
              stream_id: int = 0) -> tuple[int, int, int]:
    """DW0..DW2 of a transaction packet (USB 3.2 §8.5; LUNA ``ACKHeaderPacket``); the Stream
    ID is DW2's bits 15:0 (0 on an endpoint without streams)."""
    dw0 = int(HeaderPacketType.TRANSACTION) | (address & 0x7F) << 25
    dw1 = (int(subtype) | int(retry) << 6 | direction << 7 | (endpoint & 0xF) << 8
           | (packets & 0x1F) << 16 | (sequence % SEQUENCE_MODULO) << 21)
    dw2 = int(packets_pending) << 27 | (stream_id & 0xFFFF)
    return dw0, dw1, dw2


def data_header(address: int, *, endpoint: int, direction: int, sequence: int, length: int,
                setup: bool = False, end_of_burst: bool = False,
                packets_pending: bool = False, stream_id: int = 0) -> tuple[int, int, int]:
    """DW0..DW2 of a data packet header (USB 3.2 §8.6; LUNA ``DataHeaderPacket``); the Stream
    ID is DW2's bits 15:0."""
    dw0 = int(HeaderPacketType.DATA) | (address & 0x7F) << 25
    dw1 = ((sequence % SEQUENCE_MODULO) | int(end_of_burst) << 6 | direction << 7
           | (endpoint & 0xF) << 8 | int(setup) << 15 | (length & 0xFFFF) << 16)
    return dw0, dw1, int(packets_pending) << 27 | (stream_id & 0xFFFF)


def itp_header(bus_interval: int, delta: int = 0) -> tuple[int, int, int]:
    """DW0..DW2 of an isochronous timestamp packet (USB 3.2 §8.7; LUNA ``timestamp.py``)."""
    dw0 = int(HeaderPacketType.ISOCHRONOUS_TIMESTAMP) | (bus_interval & 0x3FFF) << 5 \
        | (delta & 0x1FFF) << 19
    return dw0, 0, 0


class SuperSpeedProtocol:
    """Transactions with the device over a :class:`SuperSpeedLink`.

    Headers the device sends are queued here (the link calls :meth:`deliver`); a transaction
    waits for the one it expects with :meth:`expect`. Several transactions may wait at once (a
    loopback's IN and OUT endpoints, dual simplex): each takes the first header it accepts, and a
    header it skips stays queued when another waiter would take it or :attr:`keep` says a
    transaction in flight will want it, else it is dropped.

    Attributes
    ----------
    keep : Callable[[HeaderPacket], bool]
        Headers to keep though nobody waits for them at the moment (the host controller's: those
        of an endpoint with transfers queued). Without it, an IN endpoint's ERDY that arrived
        while its mover was sending an ACK TP or an ITP was dropped by the OUT mover's wait, and
        the IN transfer never moved again ("no IN data on endpoint 1").
    """

    def __init__(self, link: SuperSpeedLink) -> None:
        self.link = link
        self.address = 0
        self._received: deque[HeaderPacket] = deque()
        self._arrived = Event()
        self._waiters: list[Callable[[HeaderPacket], bool]] = []
        self.keep: Callable[[HeaderPacket], bool] = lambda header: False
        link.on_header = self.deliver

    def deliver(self, header: HeaderPacket) -> None:
        self._received.append(header)
        self._arrived.set()

    def _take(self, accept: Callable[[HeaderPacket], bool]) -> HeaderPacket | None:
        others = [waiter for waiter in self._waiters if waiter is not accept]
        kept: deque[HeaderPacket] = deque()
        found = None
        while self._received and found is None:
            header = self._received.popleft()
            if accept(header):
                found = header
            elif any(other(header) for other in others) or self.keep(header):
                kept.append(header)
        kept.extend(self._received)
        self._received = kept
        return found

    async def expect(self, accept: Callable[[HeaderPacket], bool], timeout_cycles: int,
                     what: str) -> HeaderPacket:
        """The first received header ``accept`` takes (see the class docstring for the ones it
        skips)."""
        deadline = self.link.partner.cycle + timeout_cycles
        self._waiters.append(accept)
        try:
            while True:
                header = self._take(accept)
                if header is not None:
                    return header
                remaining = deadline - self.link.partner.cycle
                if remaining <= 0:
                    raise DeviceTimeout(f"no {what} within {timeout_cycles} cycles")
                self._arrived.clear()
                await First(self._arrived.wait(), Timer(remaining * CLOCK_PERIOD_PS, "ps"))
        finally:
            self._waiters.remove(accept)

    @staticmethod
    def from_endpoint(endpoint: int) -> Callable[[HeaderPacket], bool]:
        """Takes the device's data and transaction packets of ``endpoint`` only: with several
        endpoints moving at once (IN and OUT, a control transfer beside them), one that took
        any would swallow another's packets."""
        def accept(header: HeaderPacket) -> bool:
            return header.type in (HeaderPacketType.DATA, HeaderPacketType.TRANSACTION) \
                and header.field(1, 8, 4) == endpoint
        return accept

    def _tp_from_device(self, endpoint: int, *subtypes: TransactionPacketSubtype
                        ) -> Callable[[HeaderPacket], bool]:
        def accept(header: HeaderPacket) -> bool:
            return (header.type == HeaderPacketType.TRANSACTION
                    and header.field(1, 0, 4) in subtypes and header.field(1, 8, 4) == endpoint)
        return accept

    async def _expect_ack(self, endpoint: int, what: str, timeout: int) -> HeaderPacket:
        header = await self.expect(self._tp_from_device(
            endpoint, TransactionPacketSubtype.ACK, TransactionPacketSubtype.STALL), timeout,
            what)
        if header.field(1, 0, 4) == TransactionPacketSubtype.STALL:
            raise DeviceStall(f"endpoint {endpoint} stalled ({what})")
        return header

    async def control(self, request_type: int, request: int, value: int, index: int,
                      length_or_data: int | bytes, timeout_cycles: int = 200_000) -> bytes:
        """One control transfer: SETUP, data stage (IN if bit 7 of ``request_type``), STATUS.

        Returns the data read (IN) or b"" (OUT / no data stage).
        """
        data_out = length_or_data if isinstance(length_or_data, bytes) else b""
        length = len(data_out) if data_out else int(length_or_data)
        setup = struct.pack("<BBHHH", request_type, request, value, index, length)
        link, address = self.link, self.address
        await link.send_header(data_header(address, endpoint=0, direction=DIR_OUT, sequence=0,
                                           length=8, setup=True), setup)
        await self._expect_ack(0, "ACK of SETUP", timeout_cycles)
        received = bytearray()
        if length and request_type & 0x80:
            sequence = 0
            while True:
                await link.send_header(tp_header(address, TransactionPacketSubtype.ACK,
                                                 direction=DIR_IN, packets=1, sequence=sequence))
                header = await self.expect(self.from_endpoint(0), timeout_cycles,
                                           "control IN data")
                if header.type == HeaderPacketType.TRANSACTION:
                    if header.field(1, 0, 4) == TransactionPacketSubtype.STALL:
                        raise DeviceStall(f"control IN stalled (request {request})")
                    continue  # NRDY: the device will ERDY; ask again
                payload = header.payload or b""
                received += payload
                sequence += 1
                if len(payload) < CONTROL_MAX_PACKET or len(received) >= length:
                    break
            # Acknowledge the last packet, asking for no more (NumP 0).
            await link.send_header(tp_header(address, TransactionPacketSubtype.ACK,
                                             direction=DIR_IN, packets=0, sequence=sequence))
        elif data_out:
            for sequence, offset in enumerate(range(0, len(data_out), CONTROL_MAX_PACKET)):
                chunk = data_out[offset:offset + CONTROL_MAX_PACKET]
                await link.send_header(data_header(address, endpoint=0, direction=DIR_OUT,
                                                   sequence=sequence, length=len(chunk)), chunk)
                await self._expect_ack(0, "ACK of control OUT data", timeout_cycles)
        status_direction = DIR_OUT if request_type & 0x80 and length else DIR_IN
        await link.send_header(tp_header(address, TransactionPacketSubtype.STATUS,
                                         direction=status_direction))
        await self._expect_ack(0, "ACK of STATUS", timeout_cycles)
        return bytes(received)
