"""cocotbext-pcie's link ports, without a task per wait or per packet (simulation speed).

A cocotbext-pcie :class:`~cocotbext.pcie.core.port.Port` sends every packet from one transmit
task, which sleeps until a TLP is queued or an ACK or a flow-control DLLP is due::

    await First(self.tx_queue_sync.wait(), self.send_ack.wait(), self.send_fc.wait())

cocotb 2's :class:`~cocotb.triggers.First` runs each of its awaitables in a task of its own and
cancels the others when one completes: three tasks made, started and ended, and an internal event,
to wait for one of three events. A link carries two or three packets per TLP (the TLP, its ACK,
an UpdateFC), each waking this task once, so these were one of the largest costs per TLP of
every PCIe simulation in the profile (issue 30, DESIGN §2.12 "Simulation speed").

:func:`install` gives ``cocotbext.pcie.core.port`` (that module's name ``First`` only, in this one
place) :func:`first`: when every awaitable is an :class:`~cocotb.triggers.Event`'s ``wait()``,
it returns :class:`FirstEvent`, one trigger that fires when the first of those events is set
(at once if one already is), registered on the events' own triggers; anything else goes to
cocotb's ``First`` unchanged. The waiting task resumes as it did, when the first event is set;
it no longer waits for a waiter task to be scheduled in between. ``test_port_speed.py`` checks it
against cocotb's ``First``.

A :class:`~cocotbext.pcie.core.port.SimPort` puts each packet on the wire for its serialisation
time and then starts a task that waits the link's delay and hands it to the other end: a task
made, run and ended per packet. :func:`install` also gives ``SimPort`` a ``handle_tx`` that puts
the packet, with the simulated step it is due at the other end, on the port's
:class:`DeliveryLine`: one task per port that waits for each packet's step in turn and hands it
over, in the same step upstream's task would. The packets of one direction leave one after
another (the transmit task serialises them) and the delay is the port's constant, so they
arrive in the order sent, each at least a step after the one before.
"""

from __future__ import annotations

from collections import deque

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import Event, First, Timer, Trigger

__all__ = ["install", "first", "FirstEvent", "UPSTREAM_FIRST", "DeliveryLine"]

#: The type of the trigger ``Event.wait()`` returns (cocotb keeps its class private).
_EVENT_WAIT = type(Event().wait())
#: cocotb's ``First``, which :func:`first` falls back to.
UPSTREAM_FIRST = First


class FirstEvent(Trigger):
    """Fires when the first of ``events`` is set (at once when primed if one already is).

    Parameters
    ----------
    events : sequence of Event
    """

    def __init__(self, events) -> None:
        super().__init__()
        self._events = tuple(events)
        self._handles: list = []

    def _prime(self) -> None:
        for event in self._events:
            if event.is_set():
                self._react()
                return
        self._handles = [event.wait()._register(self._fire) for event in self._events]

    def _fire(self) -> None:
        self._unprime()
        self._react()

    def _unprime(self) -> None:
        handles, self._handles = self._handles, []
        for handle in handles:
            try:
                handle.cancel()
            except KeyError:  # the event that fired has already let go of its callbacks
                pass

    def __repr__(self) -> str:
        return f"<FirstEvent of {len(self._events)} events>"


def first(*awaitables):
    """:class:`FirstEvent` when every awaitable is an ``Event.wait()``, else cocotb's ``First``."""
    if awaitables and all(type(a) is _EVENT_WAIT for a in awaitables):
        return FirstEvent(a._parent for a in awaitables)
    return UPSTREAM_FIRST(*awaitables)


class DeliveryLine:
    """The wire from one :class:`~cocotbext.pcie.core.port.SimPort` to the other end: packets
    handed over in order, each at the simulated step it is due.

    Parameters
    ----------
    port : SimPort
        The sending port (its ``other`` receives, through ``ext_recv``).
    """

    def __init__(self, port) -> None:
        self.port = port
        self._packets: deque = deque()
        self._sent = Event()
        cocotb.start_soon(self._run())

    def send(self, pkt, due: int) -> None:
        """Hand ``pkt`` to the other end at simulated step ``due``."""
        self._packets.append((due, pkt))
        self._sent.set()

    async def _run(self) -> None:
        packets, port = self._packets, self.port
        while True:
            while not packets:
                self._sent.clear()
                await self._sent.wait()
            due, pkt = packets[0]
            delay = due - get_sim_time("step")
            if delay > 0:
                await Timer(delay, "step")
            packets.popleft()
            if port.other is None:
                raise Exception("Port not connected")  # upstream's words
            await port.other.ext_recv(pkt)


async def handle_tx(self, pkt) -> None:
    """``SimPort.handle_tx``: the packet's serialisation time (upstream's), then onto the line."""
    await Timer(max(int(pkt.get_wire_size() * self.symbol_period * self.time_scale), 1), "step")
    line = self.__dict__.get("_busprobe_line")
    if line is None:
        line = self.__dict__["_busprobe_line"] = DeliveryLine(self)
    line.send(pkt, get_sim_time("step") + max(self.link_delay_steps, 1))


def install() -> None:
    """Give cocotbext-pcie's ports :func:`first` for ``First`` and ``SimPort`` the
    :class:`DeliveryLine` (idempotent)."""
    from cocotbext.pcie.core import port

    port.First = first
    port.SimPort.handle_tx = handle_tx
