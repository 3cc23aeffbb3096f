"""One bulk transaction for a transfer, as a USB 2.0 host controller does it (§8.5).

:class:`HostController <.controller.HostController>` owns an :class:`EndpointState` per bulk
endpoint (data toggle, PING state, progress) and hands it down with the transfer it chose; the
functions here do one IN or OUT transaction on the link and say whether the transfer is done.
They know nothing of queues or scheduling, which are the controller's.
"""

from __future__ import annotations

from dataclasses import dataclass

from busprobe.protocol.names import Direction
from busprobe.protocol.usb2_wire import Pid

from ..transfer_engine import Pending
from .link import LinkError, TransactionResult, UlpiHostModel

__all__ = ["EndpointState", "TransferStall", "StreamStuck", "STUCK_UFRAMES", "transact_in",
           "transact_out"]

#: A transfer that makes no progress for this many microframes (100 ms simulated, ~20 s of
#: simulation) is abandoned with a timeout, as libusb's transfer timeout would.
STUCK_UFRAMES = 800


class TransferStall(LinkError):
    """The device answered STALL to a control request."""


class StreamStuck(LinkError):
    """Transfers made no progress for :data:`STUCK_UFRAMES` microframes."""


@dataclass
class EndpointState:
    """What the host keeps per bulk endpoint.

    Attributes
    ----------
    address : int
        Endpoint address (bit 7: IN).
    toggle : Pid
        DATA0/DATA1 the host expects (IN) or sends (OUT) next.
    ping_first : bool
        OUT: the device NAKed or NYETed, so the next attempt starts with a PING (§8.5.1).
    progress_uframe : int or None
        Microframe of the last ACKed data (or when work started); None while idle.
    """

    address: int
    toggle: Pid = Pid.DATA0
    ping_first: bool = False
    progress_uframe: int | None = None

    @property
    def number(self) -> int:
        return self.address & 0x0F

    @property
    def direction(self) -> str:
        return Direction.IN if self.address & 0x80 else Direction.OUT

    def flip(self) -> None:
        """A data packet was accepted: the next one has the other PID."""
        self.toggle = Pid.DATA1 if self.toggle == Pid.DATA0 else Pid.DATA0

    def check_stuck(self, uframe: int) -> None:
        if self.progress_uframe is None:
            self.progress_uframe = uframe
        elif uframe - self.progress_uframe > STUCK_UFRAMES:
            raise StreamStuck(f"bulk {self.direction} on endpoint {self.number} made no "
                              f"progress for {STUCK_UFRAMES} microframes")


async def transact_in(link: UlpiHostModel, device: int, state: EndpointState, pending: Pending,
                      *, reserve: int, max_packet_size: int,
                      counters: dict[str, int]) -> tuple[bool, TransactionResult]:
    """One IN transaction for ``pending``; True when the transfer is done (short packet, every
    byte asked for, or a STALL)."""
    result = await link.transaction_in(device, state.number, reserve_cycles=reserve)
    counters["transactions"] += 1
    if result.handshake == Pid.STALL:
        return True, result
    if result.handshake == Pid.NAK:
        counters["naks"] += 1
    elif result.data_pid is not None and result.handshake == Pid.ACK:
        state.progress_uframe = link.uframe
        if result.data_pid == state.toggle:
            state.flip()
            pending.received += result.payload
            length = pending.transfer.length
            if len(pending.received) > length:
                raise LinkError(f"device sent {len(pending.received)} bytes into an IN "
                                f"transfer of {length}")
            return (len(result.payload) < max_packet_size
                    or len(pending.received) == length), result
        counters["repeats"] += 1  # a repeat of a packet whose ACK the device missed (§8.6.4)
    return False, result


async def transact_out(link: UlpiHostModel, device: int, state: EndpointState, pending: Pending,
                       *, reserve: int, max_packet_size: int,
                       counters: dict[str, int]) -> tuple[bool, TransactionResult | None]:
    """One OUT transaction for ``pending`` (a PING first after a NAK or NYET); True when every
    byte (and the ZLP the transfer asks for) is acknowledged, or on a STALL. ``None`` for a
    NAKed PING."""
    if state.ping_first:
        result = await link.ping(device, state.number)
        counters["transactions"] += 1
        if result.handshake == Pid.STALL:
            return True, result
        if result.handshake != Pid.ACK:
            counters["naks"] += 1
            return False, None
        state.ping_first = False
    transfer = pending.transfer
    data = transfer.data or bytes(transfer.length)
    chunk = data[pending.offset:pending.offset + max_packet_size]
    result = await link.transaction_out(device, state.number, state.toggle, chunk,
                                        reserve_cycles=reserve)
    counters["transactions"] += 1
    if result.handshake == Pid.STALL:
        return True, result
    if result.handshake not in (Pid.ACK, Pid.NYET):
        counters["naks"] += 1
        state.ping_first = True
        return False, result
    state.progress_uframe = link.uframe
    state.flip()
    if result.handshake == Pid.NYET:
        counters["nyets"] += 1
        state.ping_first = True
    if not chunk:
        pending.zlp_sent = True
    pending.offset += len(chunk)
    return pending.offset == transfer.length and (
        not transfer.zlp or transfer.length % max_packet_size or pending.zlp_sent), result
