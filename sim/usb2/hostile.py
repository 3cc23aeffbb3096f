"""A hostile USB 2.0 host: corrupted packets interleaved with valid bulk traffic.

:class:`HostileHost` drives the device through the same ULPI PHY model and link layer as the
well-behaved host, but between valid IN and OUT transactions it puts packets on the line that a
broken cable, a confused hub or a buggy host controller would: bit errors under the CRC5 or
CRC16, PIDs whose check nibble is wrong or whose nibbles are swapped, packets cut short, tokens
for another address or a missing endpoint, data with the wrong toggle, babble, a handshake that
never comes or comes corrupted, and a token where the handshake should be.

The device must answer none of the corrupted packets, lose and duplicate no data, and count each
dropped packet in its telemetry (``rx_*`` words, ``out_duplicates``: the receive-drop counters,
:attr:`~busprobe.protocol.usb2.Feature.RX_DROPS`, which only the full design has, so the test
runs on that one). :class:`DropOracle` is
the oracle: the class the USB 2.0 specification gives each packet, written from the spec here,
independently of the gateware's :class:`~busprobe.gateware.usb2.rx_monitor.RxPacketMonitor`.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from busprobe.protocol import usb2
from busprobe.protocol import usb2_wire as wire
from busprobe.protocol.names import Direction
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.protocol.usb2_wire import Pid

from .bulk_transactions import EndpointState
from .link import IPD_HOST, IPD_TURN, RESPONSE_TIMEOUT, LinkError
from .phy import DevicePacket
from .session import Usb2Session

__all__ = ["HostileHost", "HostileTally", "DropOracle", "FAULTS", "DROP_COUNTERS"]

EP_IN = usb2.EP_IN & 0x7F
EP_OUT = usb2.EP_OUT
#: Telemetry words that count dropped packets, by the class :func:`expected_drop` returns.
DROP_COUNTERS = ("rx_bad_pids", "rx_malformed", "rx_crc_errors", "rx_foreign")
ENDPOINTS = (0, EP_IN, EP_OUT)
_TOKENS = (Pid.OUT, Pid.IN, Pid.SETUP, Pid.PING, Pid.SOF)


class DropOracle:
    """The telemetry word that must count each packet the device receives as dropped.

    Written from the specification, independently of the gateware: §8.3.1, the PID's upper
    nibble is the complement of the lower, and reserved, SPLIT and PRE PIDs are nothing a
    high-speed function acts on; §8.4, a token is 3 bytes, a handshake 1, a data packet PID +
    payload (≤ wMaxPacketSize) + CRC16; §8.3.5, CRC5 over the token fields, CRC16 over the
    payload; §8.5, a data packet belongs to the OUT or SETUP token right before it, so any
    other is no one's here. Feed it every packet the host sends, in order.

    Parameters
    ----------
    address : Callable[[], int]
        The device's address now.
    """

    def __init__(self, address: Callable[[], int]) -> None:
        self.address = address
        self.expect_data = False

    def classify(self, packet: bytes) -> str | None:
        drop, self.expect_data = self._classify(packet), False
        if drop is None and Pid(packet[0] & 0xF) in (Pid.OUT, Pid.SETUP):
            self.expect_data = True
        return drop

    def _classify(self, packet: bytes) -> str | None:
        pid_byte = packet[0]
        code = pid_byte & 0xF
        if pid_byte >> 4 != (~code & 0xF) or code in (0x0, 0x8, 0xC):
            return "rx_bad_pids"
        pid = Pid(code)
        if pid in _TOKENS:
            if len(packet) != 3:
                return "rx_malformed"
            fields = packet[1] | packet[2] << 8
            if wire.crc5(fields & 0x7FF) != fields >> 11:
                return "rx_crc_errors"
            if pid == Pid.SOF:
                return None
            for_us = (fields & 0x7F) == self.address() and (fields >> 7 & 0xF) in ENDPOINTS
            return None if for_us else "rx_foreign"
        if pid.is_data:
            if not 3 <= len(packet) <= 3 + usb2.MAX_PACKET_SIZE:
                return "rx_malformed"
            if wire.crc16(packet[1:-2]).to_bytes(2, "little") != packet[-2:]:
                return "rx_crc_errors"
            return None if self.expect_data else "rx_foreign"
        return None if len(packet) == 1 else "rx_malformed"


@dataclass
class HostileTally:
    """What a hostile run did, to compare with the device's telemetry.

    Attributes
    ----------
    faults : Counter
        Corrupted transactions injected, by fault name (:data:`FAULTS`).
    drops : Counter
        Packets sent that the device must drop, by telemetry word (:data:`DROP_COUNTERS`; None
        for the intact ones).
    packets : int
        Packets of every kind the host put on the line (SOFs included).
    duplicates : int
        OUT data packets sent with the previous toggle (``out_duplicates``).
    out_bytes, in_bytes : int
        Payload the device accepted on OUT / the host accepted on IN.
    in_errors : int
        IN words that did not match the pattern (must stay 0).
    in_repeats : int
        IN packets the device sent again because their ACK was lost or corrupted.
    """

    faults: Counter = field(default_factory=Counter)
    drops: Counter = field(default_factory=Counter)
    packets: int = 0
    duplicates: int = 0
    out_bytes: int = 0
    in_bytes: int = 0
    in_errors: int = 0
    in_repeats: int = 0


class HostileHost:
    """Corrupted and valid bulk traffic on one configured device (see the module docstring).

    Parameters
    ----------
    session : Usb2Session
        An enumerated device; its host's address and data toggles are used and kept.
    pattern : Pattern
        The pattern the device's IN source and OUT checker were set to.
    seed : int
        Seed of the fault sequence (a failure reproduces from it).
    """

    def __init__(self, session: Usb2Session, pattern: Pattern, seed: int) -> None:
        self.session = session
        self.link = session.link
        self.phy = session.link.phy
        self.host = session.host
        self.rng = random.Random(seed)
        self.out_source = PatternStream(pattern)
        self.in_expected = PatternStream(pattern)
        self.out_chunk: bytes | None = None  # the OUT packet not yet ACKed (sent again)
        self.tally = HostileTally()
        self.oracle = DropOracle(lambda: self.host.address)
        self._in_owed = False

    # -- the line --------------------------------------------------------------------------------

    @property
    def address(self) -> int:
        return self.host.address

    def _endpoint(self, direction: str) -> EndpointState:
        return self.host.endpoint(usb2.EP_IN if direction == Direction.IN else usb2.EP_OUT)

    def _toggle(self, direction: str) -> Pid:
        return self._endpoint(direction).toggle

    def _flip(self, direction: str) -> None:
        self._endpoint(direction).flip()

    async def _send(self, *packets: bytes, expect: str) -> DevicePacket | None:
        """Put ``packets`` on the line back to back in one microframe and collect the answer.

        ``expect`` is ``"none"`` (the device must stay silent), ``"handshake"`` or ``"data"``.
        Returns the answer (None for silence); a wrong kind of answer is a
        :class:`LinkError` naming the packets.
        """
        bits = sum(wire.packet_bits_of(p) for p in packets) + 2 * wire.RESPONSE_MAX_BITS
        cost = wire.bits_to_cycles(bits + 512 * 8 + 64) + len(packets) * IPD_HOST \
            + RESPONSE_TIMEOUT
        at = await self.link.reserve(cost)
        for packet in packets:
            self.tally.drops[self.oracle.classify(packet)] += 1
            at = await self.phy.send(packet, at) + IPD_HOST
        self.tally.packets += len(packets)
        answer = await self.phy.receive(max(at - self.phy.cycle, 0) + RESPONSE_TIMEOUT)
        if answer is None:
            self.link.free_at = at + RESPONSE_TIMEOUT + IPD_TURN
            if expect != "none":
                raise LinkError(f"no {expect} after {self._show(packets)}")
            return None
        self.link.free_at = answer.wire_end + IPD_TURN
        pid = Pid(answer.pid)
        if expect == "none" or (expect == "data") != pid.is_data:
            raise LinkError(f"device answered {self._show(packets)} with {pid.name} "
                            f"(expected {expect})")
        return answer

    @staticmethod
    def _show(packets: tuple[bytes, ...]) -> str:
        return " + ".join(p[:6].hex() + ("…" if len(p) > 6 else "") for p in packets)

    def _token(self, pid: Pid, endpoint: int) -> bytes:
        return wire.token_bytes(pid, self.address, endpoint)

    # -- valid traffic ---------------------------------------------------------------------------

    async def valid_out(self) -> None:
        """One OUT packet of the pattern; sent again until the device ACKs it."""
        if self.out_chunk is None:
            self.out_chunk = self.out_source.take(usb2.MAX_PACKET_SIZE)
        answer = await self._send(self._token(Pid.OUT, EP_OUT),
                                  wire.data_bytes(self._toggle("out"), self.out_chunk),
                                  expect="handshake")
        if answer.pid in (Pid.ACK, Pid.NYET):
            self._flip("out")
            self.tally.out_bytes += len(self.out_chunk)
            self.out_chunk = None

    async def _in_data(self) -> tuple[Pid, bytes]:
        answer = await self._send(self._token(Pid.IN, EP_IN), expect="data")
        if not answer.crc_ok:
            raise LinkError("IN data corrupt")
        return Pid(answer.pid), answer.data[1:-2]

    def _accept_in(self, pid: Pid, payload: bytes) -> None:
        if pid == self._toggle("in"):
            self._flip("in")
            self.tally.in_errors += self.in_expected.check(payload).errors
            self.tally.in_bytes += len(payload)
        else:  # the device missed our ACK and sent the packet again (§8.6.4)
            self.tally.in_repeats += 1
            self._in_owed = False

    async def valid_in(self, handshake: bytes | None = None) -> None:
        """One IN packet, answered with ``handshake`` (default ACK)."""
        pid, payload = await self._in_data()
        await self._after_in(handshake or wire.handshake_bytes(Pid.ACK))
        self._accept_in(pid, payload)

    async def _after_in(self, packet: bytes) -> None:
        self.tally.drops[self.oracle.classify(packet)] += 1
        self.tally.packets += 1
        end = await self.phy.send(packet, self.link.free_at)
        self.link.free_at = end + IPD_TURN

    # -- faults ----------------------------------------------------------------------------------

    def _flip_bit(self, packet: bytes, first: int, last: int) -> bytes:
        bit = self.rng.randrange(8 * first, 8 * last)
        data = bytearray(packet)
        data[bit // 8] ^= 1 << (bit % 8)
        return bytes(data)

    def _any_token(self) -> bytes:
        pid = self.rng.choice((Pid.OUT, Pid.IN, Pid.SETUP, Pid.PING))
        return self._token(pid, self.rng.choice((0, EP_IN, EP_OUT)))

    async def bad_crc5(self) -> None:
        await self._send(self._flip_bit(self._any_token(), 1, 3), expect="none")

    async def bad_crc16(self) -> None:
        # Garbage under the expected toggle: accepted by mistake, it would show as pattern errors.
        garbage = bytes(self.rng.randrange(256) for _ in range(usb2.MAX_PACKET_SIZE))
        data = wire.data_bytes(self._toggle("out"), garbage)
        await self._send(self._token(Pid.OUT, EP_OUT), self._flip_bit(data, 1, len(data)),
                         expect="none")

    async def bad_pid(self) -> None:
        packet = self.rng.choice((self._any_token(), wire.handshake_bytes(Pid.ACK),
                                  wire.data_bytes(Pid.DATA0, b"\x00" * 8)))
        await self._send(self._flip_bit(packet, 0, 1)[:1] + packet[1:], expect="none")

    async def inverted_pid(self) -> None:
        packet = self._any_token()
        swapped = ((packet[0] & 0xF) << 4) | (packet[0] >> 4)
        await self._send(bytes((swapped,)) + packet[1:], expect="none")

    async def truncated(self) -> None:
        packet = self.rng.choice((self._any_token(), wire.data_bytes(Pid.DATA1, bytes(40))))
        await self._send(packet[:self.rng.randrange(1, len(packet))], expect="none")

    async def foreign(self) -> None:
        other = self.rng.choice([a for a in range(128) if a != self.address])
        pid = self.rng.choice((Pid.OUT, Pid.IN, Pid.SETUP, Pid.PING))
        if self.rng.random() < 0.5:
            token = wire.token_bytes(pid, other, self.rng.choice((0, EP_IN, EP_OUT)))
        else:
            token = self._token(pid, self.rng.choice([e for e in range(16)
                                                      if e not in (0, EP_IN, EP_OUT)]))
        packets = [token]
        if pid in (Pid.OUT, Pid.SETUP):  # its data follows, intact, and is no one's either
            packets.append(wire.data_bytes(Pid.DATA0, bytes(self.rng.randrange(64))))
        await self._send(*packets, expect="none")

    async def toggle_error(self) -> None:
        """Garbage under the previous toggle: the device ACKs it and must drop it (§8.6.3)."""
        stale = Pid.DATA1 if self._toggle("out") == Pid.DATA0 else Pid.DATA0
        garbage = bytes(self.rng.randrange(256) for _ in range(usb2.MAX_PACKET_SIZE))
        answer = await self._send(self._token(Pid.OUT, EP_OUT), wire.data_bytes(stale, garbage),
                                  expect="handshake")
        pid = Pid(answer.pid)
        if pid != Pid.ACK:
            raise LinkError(f"device answered a repeated OUT toggle with {pid.name}, not ACK")
        self.tally.duplicates += 1

    async def babble(self) -> None:
        payload = bytes(usb2.MAX_PACKET_SIZE + self.rng.randrange(1, 6))
        await self._send(self._token(Pid.OUT, EP_OUT),
                         wire.data_bytes(self._toggle("out"), payload), expect="none")

    async def lost_ack(self) -> None:
        """IN data never acknowledged: the device must send the same packet again."""
        await self._in_data()  # not accepted: our toggle stays, the retry carries it
        self.link.free_at += RESPONSE_TIMEOUT

    async def corrupt_ack(self) -> None:
        """IN data accepted, but the ACK arrives with a bad PID: the device repeats the packet,
        which this host must recognise by its toggle and drop."""
        ack = wire.handshake_bytes(Pid.ACK)
        await self.valid_in(handshake=bytes((ack[0] ^ 0x10,)))
        self._in_owed = True  # the device has not counted it yet: its repeat is owed

    async def token_for_ack(self) -> None:
        """IN data answered by the next transaction's OUT token instead of an ACK."""
        await self._in_data()
        await self.valid_out()

    async def run(self, corrupted: int, valid_per_fault: int = 1,
                  progress: Callable[[int], None] | None = None) -> HostileTally:
        """``corrupted`` faults drawn at random from :data:`FAULTS`, each followed by
        ``valid_per_fault`` valid IN or OUT packets."""
        for index in range(corrupted):
            name = self.rng.choice(FAULTS)
            self.tally.faults[name] += 1
            await getattr(self, name)()
            for _ in range(valid_per_fault):
                await (self.valid_out() if self.rng.random() < 0.5 else self.valid_in())
            if progress and index % 1000 == 999:
                progress(index + 1)
        # End on a settled bus: the last OUT packet delivered, the last corrupted ACK's repeat
        # taken, so the device's byte counts and the host's must agree exactly.
        while self.out_chunk is not None:
            await self.valid_out()
        while self._in_owed:
            await self.valid_in()
        return self.tally


#: Fault injections, by method name.
FAULTS = ("bad_crc5", "bad_crc16", "bad_pid", "inverted_pid", "truncated", "foreign",
          "toggle_error", "babble", "lost_ack", "corrupt_ack", "token_for_ack")
