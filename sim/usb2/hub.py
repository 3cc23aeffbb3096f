"""Several devices on the simulated high-speed host: one bus behind a hub, or a bus each.

``sim:usb2?devices=2&attach=hub|ports`` puts two busprobe devices in one simulation
(:mod:`.multi_top`); this module is the host side of the line(s) they hang on.

:class:`SharedLine`
    A :class:`~.link.UlpiHostModel` whose one line timeline (microframes, SOFs, the next free
    cycle) serves the PHYs of several devices. Behind a high-speed hub every device is on the
    same 480 Mb/s bus: a HS hub's repeater forwards each downstream packet to every enabled
    port and each device answers only packets addressed to it (USB 2.0 §11.1.2.1; a transaction
    translator is for full- and low-speed devices only). The model sends each token, data
    packet and handshake to the PHY of the device it is addressed to (the others would ignore
    it) and every SOF to all; the hub adds no delay (its repeater's few bit times are well
    within the inter-packet gaps the line already counts). On separate root ports each device
    has a line of its own (one PHY). Either way a line keeps sending SOFs while no request
    uses it (:meth:`SharedLine.keep_sofs`), as a root port does: a high-speed device that
    sees 3 ms of idle bus takes it for a suspend or reset (§7.1.7.6).
:class:`HubBus`
    One transaction scheduler for the devices of one shared line: the devices' endpoints take
    turns one transaction each (:func:`~.controller.round_robin`, a USB 2.0 host controller's
    asynchronous schedule), and the bus never starts a transaction at or after a moment a
    device's host waits for (its earliest due completion, or the end of its reap) before that
    host had its say, as :class:`~busprobe.sim.transfer_engine.TransferEngine` promises one
    host. A device's host that holds completions it has not reaped yet (it is between requests
    while the others run) does not hold the bus back.
:class:`HubPort`
    A device behind the hub: its own transfers, data toggles and address (a
    :class:`~.controller.HostController`); its reaps go through the :class:`HubBus`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Sequence

from busprobe.backends.usb.transfers import Completion
from busprobe.model.usb2_hosts import HostProfile
from busprobe.protocol import usb2_wire as wire
from cocotb.triggers import Event, Lock

from ..transfer_engine import Pending
from .controller import HostController, RoundRobin, round_robin
from .link import IPD_HOST, DeviceTimeout, TransactionResult, UlpiHostModel
from .phy import UlpiPhyDriver

__all__ = ["SharedLine", "HubBus", "HubPort"]


class SharedLine(UlpiHostModel):
    """One high-speed line timeline for the devices on ``phys`` (see the module docstring).

    Parameters
    ----------
    phys : sequence of UlpiPhyDriver
        The devices' PHYs, on one clock.

    Attributes
    ----------
    routes : dict
        Device address -> its PHY.
    enumerating : UlpiPhyDriver or None
        The device that answers address 0 (the one being enumerated: a host resets and
        addresses one port at a time).
    lock : Lock
        Held by whoever puts packets on the line or lets line time pass.
    """

    def __init__(self, phys: Sequence[UlpiPhyDriver]) -> None:
        super().__init__(phys[0])
        self.phys = list(phys)
        self.routes: dict[int, UlpiPhyDriver] = {}
        self.enumerating: UlpiPhyDriver | None = phys[0] if len(phys) == 1 else None
        self.lock = Lock()

    def _route(self, address: int) -> UlpiPhyDriver:
        phy = self.routes.get(address) if address else self.enumerating
        if phy is None:
            raise DeviceTimeout(f"no device at address {address} behind the hub")
        return phy

    async def start(self) -> None:
        """The microframe clock starts now, with its first SOF on every device's line."""
        self.start_uframes()
        await self._send_sof(self.free_at)

    async def _send_sof(self, at: int) -> None:
        packet = wire.sof_bytes(self.uframe >> 3)
        end = at
        for phy in self.phys:
            end = await phy.send(packet, at)
        self.sofs += 1
        self.free_at = end + IPD_HOST

    async def advance_to(self, cycle: int) -> None:
        async with self.lock:
            await self._advance(cycle)

    async def transaction_in(self, address: int, endpoint: int, *, reserve_cycles: int,
                             ack: bool = True) -> TransactionResult:
        async with self.lock:
            self.phy = self._route(address)
            return await super().transaction_in(address, endpoint,
                                                 reserve_cycles=reserve_cycles, ack=ack)

    async def transaction_out(self, address: int, endpoint: int, data_pid: wire.Pid,
                              payload: bytes, *, setup: bool = False,
                              reserve_cycles: int) -> TransactionResult:
        async with self.lock:
            self.phy = self._route(address)
            return await super().transaction_out(address, endpoint, data_pid, payload,
                                                 setup=setup, reserve_cycles=reserve_cycles)

    async def ping(self, address: int, endpoint: int) -> TransactionResult:
        async with self.lock:
            self.phy = self._route(address)
            return await super().ping(address, endpoint)

    async def keep_sofs(self) -> None:
        """Forever: at each microframe boundary the line has not reached (no request is using
        it), let line time catch up, which sends the SOF. Started once the line runs."""
        while True:
            await self.phy.wait_cycles(max(self.uframe_end - self.phy.cycle, 60))
            if self.running and not self.lock.locked() and self.free_at <= self.phy.cycle:
                await self.advance_to(self.phy.cycle)


class HubBus(RoundRobin):
    """The one transaction scheduler of a :class:`SharedLine` with several devices.

    Parameters
    ----------
    line : SharedLine
        The bus.

    Attributes
    ----------
    ports : list of HubPort
        The devices, in the order they were attached.
    """

    def __init__(self, line: SharedLine) -> None:
        self.line = line
        self.ports: list[HubPort] = []
        self._order: list[Hashable] = []
        self._turn = 0
        self._reaping: dict[HubPort, int | None] = {}
        self._driving = False
        self._wake = Event()

    def _notify(self) -> None:
        """Wake every reap waiting for the bus to move or for a host to have its say."""
        self._wake.set()
        self._wake = Event()

    # -- RoundRobin over (device, endpoint) ---------------------------------------------------
    def _slot_limited(self, slot: Hashable) -> bool:
        index, address = slot  # type: ignore[misc]
        return self.ports[index]._at_limit(address)

    async def _slot_transact(self, slot: Hashable) -> None:
        index, address = slot  # type: ignore[misc]
        await self.ports[index]._transact(address)

    def _queues(self) -> dict[Hashable, deque[Pending]]:
        return {(index, address): queue for index, port in enumerate(self.ports)
                for address, queue in port.queues.items()}

    # -- reaps --------------------------------------------------------------------------------
    def _bound(self) -> int | None:
        """The first cycle no transaction may start at before a waiting host had its say."""
        bounds = [bound for port, until in self._reaping.items()
                  if (bound := port.bound(until)) is not None]
        return min(bounds, default=None)

    async def reap(self, port: HubPort, until: int | None) -> list[Completion]:
        """``port``'s :meth:`~busprobe.sim.transfer_engine.TransferEngine.reap` on the shared
        bus: whoever reaps first drives the bus for all, one piece of work at a time."""
        self._reaping[port] = until
        self._notify()  # a driver waiting for a host to have its say looks again
        try:
            while True:
                bound = port.bound(until)
                if bound is None and not port.busy():
                    raise ValueError("reap with no transfer in flight")
                if bound is not None and bound <= self.line.free_at:
                    return port.collect(bound)
                if self._driving:
                    await self._wake.wait()
                    continue
                stop = self._bound()
                if stop is not None and stop <= self.line.free_at:
                    # Another device's host may answer now: its reap returns first.
                    self._notify()
                    await self._wake.wait()
                    continue
                self._driving = True
                try:
                    if not await round_robin(self, self.line, self._queues(), stop):
                        assert stop is not None  # round_robin(None) works while any is queued
                        await self.line.advance_to(stop)
                finally:
                    self._driving = False
                    self._notify()
        finally:
            del self._reaping[port]
            self._notify()


class HubPort(HostController):
    """A device behind the hub (see the module docstring).

    Parameters
    ----------
    hub : HubBus
        The bus it is attached to.
    profile : HostProfile
        How the host controller schedules.
    """

    def __init__(self, hub: HubBus, profile: HostProfile) -> None:
        super().__init__(hub.line, profile)
        self.hub = hub
        hub.ports.append(self)

    async def reap(self, until: int | None = None) -> list[Completion]:
        return await self.hub.reap(self, until)
