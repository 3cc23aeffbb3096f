"""cocotb module run inside the simulator: the USB3 platform's requests, carried out on the link.

Started by :class:`~busprobe.sim.simulator.SimServer` for :mod:`busprobe.sim.usb3.backend`. It
powers the device up, trains the link to U0 and enumerates it (:class:`Usb3Session`), then
serves :class:`Usb3RpcHandler` over :mod:`busprobe.sim.rpc`: every control transfer and bulk
stream the host driver makes is carried out by the simulated xHCI through the PIPE link partner
against the gateware. The simulation does not advance between requests, so simulated time only
flows while the host model works.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any, TypeVar

import cocotb
from busprobe.model.usb3_hosts import MAX_BURST_PACKETS, load_usb3_profile
from busprobe.protocol import usb3
from busprobe.sim.rpc import BusErrors, on_the_bus, out_buffers, serve
from busprobe.transport import EndpointStalled, InvalidRequest, TransferTimeout, TransportError

from .controller import StreamOutcome
from .link import LinkError
from .protocol import DeviceStall, DeviceTimeout
from .session import Usb3Session
from .training import TrainingFailed

__all__ = ["ENV_PROFILE", "ENV_BURST", "Usb3RpcHandler"]

#: Environment variables naming the host-controller profile the simulated xHCI schedules by and
#: the cap on its burst window (packets).
ENV_PROFILE = "BUSPROBE_SIM_USB3_HOST"
ENV_BURST = "BUSPROBE_SIM_USB3_BURST"

T = TypeVar("T")


#: The PIPE host model's errors, as the transport's.
BUS_ERRORS: BusErrors = (
    (DeviceTimeout, TransferTimeout),
    (DeviceStall, EndpointStalled),
    (ValueError, InvalidRequest),
    ((LinkError, TrainingFailed), TransportError),
    (AssertionError, TransferTimeout),  # the model's own "nothing came" checks (expect())
)


class Usb3RpcHandler:
    """The requests :class:`~busprobe.sim.usb3.backend.SimUsb3Platform` makes (``rpc_<name>``).

    Every answer carries ``cycle``, the 125 MHz PIPE clock count after the request, which is the
    platform's clock.

    Parameters
    ----------
    session : Usb3Session
        Link in U0, device enumerated.
    """

    def __init__(self, session: Usb3Session) -> None:
        self.session = session

    @property
    def cycle(self) -> int:
        return self.session.partner.cycle

    async def rpc_control(self, request_type: int, request: int, value: int, index: int,
                          length_or_data: int | bytes) -> tuple[bytes, int]:
        # The driver's OUT requests without a data stage pass b""; the host model takes a
        # length of 0 for those.
        if isinstance(length_or_data, bytes) and not length_or_data:
            length_or_data = 0
        data = await on_the_bus(f"control request {request:#04x}", lambda: self.session.host
                                .control(request_type, request, value, index, length_or_data),
                                BUS_ERRORS)
        return bytes(data or b""), self.cycle

    async def rpc_stream(self, endpoint: int, length: int, count: int, queue_depth: int,
                         outgoing: Sequence[bytes] | None) -> dict[str, Any]:
        """``count`` bulk transfers on ``endpoint``; IN data comes back in ``in_data``."""
        direction = "in" if endpoint & 0x80 else "out"
        received: list[bytes] = []
        started, cycle0 = time.perf_counter(), self.cycle
        outcome = await on_the_bus(f"bulk {direction} transfer", lambda: self.session.host
                                    .stream(direction, endpoint & 0x7F, length, count,
                                            queue_depth, source=out_buffers(outgoing),
                                            sink=received.append), BUS_ERRORS)
        return self._reply(outcome, started, cycle0, received)

    def _reply(self, outcome: StreamOutcome, started: float, cycle0: int,
               received: list[bytes]) -> dict[str, Any]:
        # The transport's short transfer is a completion with fewer bytes than asked; the
        # controller's OUT count is of transfers ending in a short packet (every one of a length
        # that is not a multiple of 1024), and an OUT transfer always sends its whole buffer.
        short = outcome.short_transfers if outcome.direction == "in" else 0
        return {"bytes": outcome.bytes, "transfers": outcome.transfers,
                "short_transfers": short, "start": outcome.start,
                "end": outcome.end, "nrdys": outcome.nrdys, "retries": outcome.retries,
                "packets": outcome.packets, "ack_tps": outcome.ack_tps,
                "link": dict(vars(self.session.link.counters)),
                "wall_seconds": time.perf_counter() - started,
                "sim_cycles": self.cycle - cycle0, "cycle": self.cycle, "in_data": received}


@cocotb.test()
async def serve_usb3(dut: Any) -> None:
    """Power up, train, enumerate, then serve requests until the host shuts down or
    disconnects."""
    profile = load_usb3_profile(os.environ.get(ENV_PROFILE, "ideal")).with_burst(
        int(os.environ.get(ENV_BURST, MAX_BURST_PACKETS)))

    async def setup() -> tuple[Usb3RpcHandler, dict[str, Any]]:
        session = Usb3Session(dut, profile)
        started = time.perf_counter()
        await on_the_bus("link training and enumeration", session.power_up, BUS_ERRORS)
        return Usb3RpcHandler(session), {
            "cycle": session.partner.cycle, "profile": profile.name,
            "max_burst_in": profile.max_burst_in, "max_burst_out": profile.max_burst_out,
            "clock_hz": usb3.CLOCK_HZ, "power_up_wall_s": time.perf_counter() - started}

    await serve(setup)
