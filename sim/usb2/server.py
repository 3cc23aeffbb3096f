"""cocotb module run inside the simulator: the USB2 platform's requests, carried out on the bus.

Started by :class:`~busprobe.sim.simulator.SimServer` for :mod:`busprobe.sim.usb2.backend`. It
powers the device up and enumerates it, then serves :class:`Usb2RpcHandler` over
:mod:`busprobe.sim.rpc`: every control transfer and bulk stream the host driver makes is
carried out by the simulated host controller through the ULPI PHY model against the gateware.
The simulation does not advance between requests, so simulated time only flows while the host
model works.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any, TypeVar

import cocotb
from busprobe.model.usb2_hosts import load_profile
from busprobe.protocol import usb2
from busprobe.sim.rpc import BusErrors, on_the_bus, out_buffers, serve
from busprobe.transport import EndpointStalled, InvalidRequest, TransferTimeout, TransportError

from .bot_host import run_commands
from .controller import StreamStuck, TransferStall
from .link import DeviceTimeout, LinkError
from .session import Usb2Session

__all__ = ["ENV_PROFILE", "Usb2RpcHandler"]

#: Environment variable naming the host-controller profile the simulated host schedules by.
ENV_PROFILE = "BUSPROBE_SIM_HOST"

T = TypeVar("T")


#: The ULPI host model's errors, as the transport's.
BUS_ERRORS: BusErrors = (
    ((DeviceTimeout, StreamStuck), TransferTimeout),
    (TransferStall, EndpointStalled),
    (ValueError, InvalidRequest),
    (LinkError, TransportError),
)


class Usb2RpcHandler:
    """The requests :class:`~busprobe.sim.usb2.backend.SimUsb2Platform` makes (``rpc_<name>``).

    Every answer carries ``cycle``, the ULPI clock count after the request, which is the
    platform's clock.

    Parameters
    ----------
    session : Usb2Session
        Powered up and enumerated.
    """

    def __init__(self, session: Usb2Session) -> None:
        self.session = session

    async def rpc_control(self, request_type: int, request: int, value: int, index: int,
                          length_or_data: int | bytes) -> tuple[bytes, int]:
        data = await on_the_bus(f"control request {request:#04x}", lambda: self.session.host
                                .control(request_type, request, value, index, length_or_data),
                                BUS_ERRORS)
        return bytes(data), self.session.phy.cycle

    async def rpc_reset(self) -> int:
        """Bus reset, then the standard enumeration again (address, configuration)."""
        await on_the_bus("bus reset", self.session.reset_and_enumerate, BUS_ERRORS)
        return self.session.phy.cycle

    async def rpc_stream(self, endpoint: int, length: int, count: int, queue_depth: int,
                         outgoing: Sequence[bytes] | None) -> dict[str, Any]:
        """``count`` bulk transfers on ``endpoint``; IN data comes back in ``in_data``."""
        direction = "in" if endpoint & 0x80 else "out"
        received: list[bytes] = []
        started, cycle0 = time.perf_counter(), self.session.phy.cycle
        outcome = await on_the_bus(f"bulk {direction} transfer", lambda: self.session.host
                                    .stream(direction, endpoint & 0x7F, length, count,
                                            queue_depth, max_packet_size=usb2.MAX_PACKET_SIZE,
                                            source=out_buffers(outgoing), sink=received.append),
                                   BUS_ERRORS)
        return self._reply(outcome, started, cycle0, received)

    async def rpc_loopback(self, length: int, count: int, queue_depth: int,
                           outgoing: Sequence[bytes]) -> dict[str, Any]:
        """``count`` OUT and ``count`` IN transfers queued together (the device loops OUT back
        to IN); what came back is in ``in_data``."""
        received: list[bytes] = []
        started, cycle0 = time.perf_counter(), self.session.phy.cycle
        outcome = await on_the_bus("loopback transfer", lambda: self.session.host.loopback(
            usb2.EP_OUT, usb2.EP_IN & 0x7F, length, count, queue_depth,
            max_packet_size=usb2.MAX_PACKET_SIZE, source=out_buffers(outgoing),
            sink=received.append), BUS_ERRORS)
        return self._reply(outcome, started, cycle0, received)

    def _reply(self, outcome: Any, started: float, cycle0: int,
               received: list[bytes]) -> dict[str, Any]:
        return {"bytes": outcome.bytes, "transfers": outcome.transfers,
                "short_transfers": outcome.short_transfers, "start": outcome.start,
                "end": outcome.end, "naks": outcome.naks, "nyets": outcome.nyets,
                "transactions": outcome.transactions, "repeats": outcome.repeats,
                "wall_seconds": time.perf_counter() - started,
                "sim_cycles": self.session.phy.cycle - cycle0, "cycle": self.session.phy.cycle,
                "in_data": received}

    async def rpc_bot(self, cbws: Sequence[bytes], direction: str, length: int,
                      outgoing: Sequence[bytes] | None) -> dict[str, Any]:
        """One Bulk-Only Transport command per CBW (``bot_host``); IN data in ``in_data``."""
        received: list[bytes] = []
        started, cycle0 = time.perf_counter(), self.session.phy.cycle
        outcome = await on_the_bus(f"BOT {direction} command", lambda: run_commands(
            self.session.host, cbws, direction, length, outgoing, received), BUS_ERRORS)
        return self._reply(outcome, started, cycle0, received) | {"csws": outcome.csws}


@cocotb.test()
async def serve_usb2(dut: Any) -> None:
    """Power up, enumerate, then serve requests until the host shuts down or disconnects."""
    profile = load_profile(os.environ.get(ENV_PROFILE, "ideal"))

    async def setup() -> tuple[Usb2RpcHandler, dict[str, Any]]:
        session = Usb2Session(dut, profile)
        await on_the_bus("enumeration", session.power_up, BUS_ERRORS)
        return Usb2RpcHandler(session), {"cycle": session.phy.cycle, "profile": profile.name,
                                         "strings": session.descriptors.strings}

    await serve(setup)
