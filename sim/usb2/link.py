"""USB 2.0 high-speed host link layer over the ULPI PHY model.

:class:`UlpiHostModel` owns the line: bus reset and the high-speed chirp handshake (§7.1.7.5),
the microframe timeline with an SOF every 125 us (§8.4.3.1), and single transactions (token, data,
handshake; §8.5) placed on the line at exact cycles with the spec's inter-packet delays
(§7.1.18.2) and the host's response timeout (§7.1.19.2). Line time is counted from the packets'
real bits with :mod:`busprobe.protocol.usb2_wire`. Scheduling policy (what to run when) lives above,
in :mod:`busprobe.sim.usb2.controller`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from busprobe.protocol import usb2_wire as wire
from busprobe.protocol.usb2 import CLOCK_HZ as ULPI_CLOCK_HZ
from busprobe.protocol.usb2_wire import Pid

from .phy import DevicePacket, UlpiPhyDriver, wire_linestate

__all__ = ["UlpiHostModel", "TransactionResult", "LinkError", "DeviceTimeout"]

log = logging.getLogger(__name__)

IPD_HOST = wire.bits_to_cycles(wire.IPD_HOST_BACK_TO_BACK_BITS)  # host packet after host packet
IPD_TURN = wire.bits_to_cycles(wire.IPD_MIN_BITS)  # host packet after a device packet
#: Host waits this long after its packet's EOP for the device to start answering (§7.1.19.2),
#: plus the PHY's own pipeline (RX CMD, turnaround) on both sides of the ULPI bus.
RESPONSE_TIMEOUT = wire.bits_to_cycles(wire.HOST_TIMEOUT_BITS) + 16
CYCLES_PER_US = ULPI_CLOCK_HZ // 1_000_000


class LinkError(Exception):
    """The device broke the protocol (bad PID, CRC, unexpected packet)."""


class DeviceTimeout(LinkError):
    """The device did not answer within the host's timeout."""


@dataclass
class TransactionResult:
    """Outcome of one transaction.

    Attributes
    ----------
    handshake : Pid or None
        The handshake (device's for OUT/SETUP/PING, or NAK/STALL answering an IN).
    data_pid : Pid or None
        DATA0/DATA1 of the data packet an IN returned.
    payload : bytes
        Data an IN returned.
    start, end : int
        Line cycles from the token's SYNC to the last packet's EOP.
    """

    handshake: Pid | None
    data_pid: Pid | None = None
    payload: bytes = b""
    start: int = 0
    end: int = 0


class UlpiHostModel:
    """A high-speed host's link layer driving the device through :class:`UlpiPhyDriver`.

    Attributes
    ----------
    free_at : int
        First cycle at which the host may start its next packet.
    uframe_start : int
        Cycle at which the current microframe (and its SOF) started.
    uframe : int
        Microframe counter; the SOF carries ``uframe // 8`` as frame number.
    """

    def __init__(self, phy: UlpiPhyDriver) -> None:
        self.phy = phy
        self.free_at = 0
        self.uframe_start = 0
        self.uframe = 0
        self.sofs = 0
        self.running = False  # SOFs flowing (after reset)

    # -- reset and speed negotiation ------------------------------------------------------------

    async def bus_reset(self) -> None:
        """Drive a bus reset and complete the high-speed chirp handshake (§7.1.7.5), then start
        the microframe clock."""
        self.running = False
        await self.chirp(self.phy)
        self.start_uframes()
        await self._send_sof(self.free_at)

    async def chirp(self, phy: UlpiPhyDriver) -> None:
        """Bus reset and the high-speed chirp handshake with the device on ``phy``.

        SE0, wait for the device's chirp K (it starts after 2.5 us of SE0, lasts >= 1 ms),
        answer with K-J pairs (40-60 us each) until the device switches to high speed, then idle
        in SE0 (squelch).
        """
        await phy.idle()
        phy.set_linestate(wire_linestate("SE0"))
        await self._wait_chirp(phy, True, 10_000 * CYCLES_PER_US, "did not chirp after bus reset")
        await self._wait_chirp(phy, False, 10_000 * CYCLES_PER_US, "did not end its chirp")
        await phy.wait_cycles(10 * CYCLES_PER_US)
        for _ in range(8):
            for state in ("K", "J"):
                phy.set_linestate(wire_linestate(state))
                await phy.wait_cycles(45 * CYCLES_PER_US)
            if self._device_high_speed(phy):
                break
        phy.set_linestate(wire_linestate("SE0"))
        if not self._device_high_speed(phy):
            raise LinkError(f"device stayed at full speed after the chirp handshake "
                            f"(Function Control {phy.func_ctrl:#04x})")
        await phy.wait_cycles(10 * CYCLES_PER_US)
        phy.discard_received()

    def start_uframes(self) -> None:
        """The microframe clock starts now (the caller sends its first SOF)."""
        now = self.phy.cycle
        self.uframe_start = now
        self.free_at = now
        self.running = True

    @staticmethod
    def _device_high_speed(phy: UlpiPhyDriver) -> bool:
        # Function Control (ULPI 1.1 §4.2.4): XcvrSelect 00 = HS, TermSelect 0, OpMode 00 normal.
        return phy.func_ctrl & 0x1F == 0

    @staticmethod
    async def _wait_chirp(phy: UlpiPhyDriver, level: bool, timeout: int, what: str) -> None:
        deadline = phy.cycle + timeout
        while bool(int(phy.dut.dev_chirp.value)) != level:
            if phy.cycle >= deadline:
                raise LinkError(f"device {what} within {timeout // CYCLES_PER_US} us")
            await phy.wait_cycles(2 * CYCLES_PER_US)

    # -- microframe timeline ---------------------------------------------------------------------

    @property
    def uframe_end(self) -> int:
        return self.uframe_start + wire.UFRAME_CYCLES

    async def _send_sof(self, at: int) -> None:
        end = await self.phy.send(wire.sof_bytes(self.uframe >> 3), at)
        self.sofs += 1
        self.free_at = end + IPD_HOST

    async def advance_to(self, cycle: int) -> None:
        """Let line time pass up to ``cycle``, sending the SOF of every microframe on the way."""
        await self._advance(cycle)

    async def _advance(self, cycle: int) -> None:
        # What advance_to does; reserve calls it directly, so a subclass that makes the public
        # one exclusive (the hub's shared line, sim/usb2/hub.py) does not wait for itself.
        while self.running and cycle >= self.uframe_end:
            boundary = self.uframe_end
            self.uframe += 1
            self.uframe_start = boundary
            await self._send_sof(max(boundary, self.free_at))
        if cycle > self.free_at:
            self.free_at = cycle

    async def next_uframe(self) -> None:
        await self.advance_to(self.uframe_end)

    async def reserve(self, cycles: int) -> int:
        """Start cycle for ``cycles`` of line time that must end within a microframe.

        A transaction that cannot end before the microframe's end waits for the next one
        (never overruns the next SOF).
        """
        start = max(self.free_at, self.phy.cycle + 1)
        await self._advance(start)
        start = self.free_at
        if start + cycles > self.uframe_end:
            await self._advance(self.uframe_end)
            start = self.free_at
        return start

    # -- transactions ----------------------------------------------------------------------------

    async def _response(self, after: int) -> DevicePacket:
        packet = await self.phy.receive(max(after - self.phy.cycle, 0) + RESPONSE_TIMEOUT)
        if packet is None:
            raise DeviceTimeout(f"no response from the device within {RESPONSE_TIMEOUT} cycles")
        if not packet.data or (packet.data[0] >> 4) != (~packet.data[0] & 0xF):
            raise LinkError(f"device sent a packet with a bad PID byte: {packet.data[:4].hex()}")
        return packet

    async def transaction_in(self, address: int, endpoint: int, *, reserve_cycles: int,
                             ack: bool = True) -> TransactionResult:
        """IN token; on data, check the CRC16 and ACK it (unless ``ack`` is False)."""
        start = await self.reserve(reserve_cycles)
        token_end = await self.phy.send(wire.token_bytes(Pid.IN, address, endpoint), start)
        packet = await self._response(token_end)
        pid = Pid(packet.pid)
        end = packet.wire_end
        if pid.is_data:
            body = packet.data[1:]
            if len(body) < 2 or not packet.crc_ok:
                # Corrupt data: no handshake, the device will retry (§8.5.2).
                self.free_at = end + IPD_TURN
                return TransactionResult(None, pid, b"", start, end)
            if ack:
                end = await self.phy.send(wire.handshake_bytes(Pid.ACK), end + IPD_TURN)
            self.free_at = end + IPD_TURN
            return TransactionResult(Pid.ACK if ack else None, pid, bytes(body[:-2]), start, end)
        if not pid.is_handshake:
            raise LinkError(f"device answered IN with {pid.name}")
        self.free_at = end + IPD_TURN
        return TransactionResult(pid, None, b"", start, end)

    async def transaction_out(self, address: int, endpoint: int, data_pid: Pid, payload: bytes,
                              *, setup: bool = False,
                              reserve_cycles: int) -> TransactionResult:
        """OUT (or SETUP) token, DATAx with CRC16, then the device's handshake."""
        start = await self.reserve(reserve_cycles)
        token = wire.token_bytes(Pid.SETUP if setup else Pid.OUT, address, endpoint)
        token_end = await self.phy.send(token, start)
        data_end = await self.phy.send(wire.data_bytes(data_pid, payload), token_end + IPD_HOST)
        packet = await self._response(data_end)
        pid = Pid(packet.pid)
        if not pid.is_handshake:
            raise LinkError(f"device answered OUT data with {pid.name}")
        self.free_at = packet.wire_end + IPD_TURN
        return TransactionResult(pid, None, b"", start, packet.wire_end)

    async def ping(self, address: int, endpoint: int) -> TransactionResult:
        """PING (§8.5.1): ACK if the OUT endpoint can take a packet now, NAK if not."""
        cost = wire.bits_to_cycles(wire.packet_bits(Pid.PING) + wire.packet_bits(Pid.ACK)
                                   + 2 * wire.RESPONSE_MAX_BITS)
        start = await self.reserve(cost)
        end = await self.phy.send(wire.token_bytes(Pid.PING, address, endpoint), start)
        packet = await self._response(end)
        self.free_at = packet.wire_end + IPD_TURN
        return TransactionResult(Pid(packet.pid), None, b"", start, packet.wire_end)
