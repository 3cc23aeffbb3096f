"""cocotbext-pcie's link ports, without a task per wait or per packet (simulation speed).

A cocotbext-pcie :class:`~cocotbext.pcie.core.port.Port` sends every packet from one transmit
task, which sleeps until a TLP is queued or an ACK or a flow-control DLLP is due::

    await First(self.tx_queue_sync.wait(), self.send_ack.wait(), self.send_fc.wait())

cocotb 2's :class:`~cocotb.triggers.First` runs each of its awaitables in a task of its own and
cancels the others when one completes: three tasks made, started and ended, and an internal event,
to wait for one of three events. A link carries two or three packets per TLP (the TLP, its ACK,
an UpdateFC), each waking this task once, so these were one of the largest costs per TLP of
every PCIe simulation in the profile (issue 30, DESIGN §5.3 "Simulation speed").

:func:`first` stands in for that ``First``: when every awaitable is an
:class:`~cocotb.triggers.Event`'s ``wait()``, it returns
:class:`~.trigger_callbacks.FirstEvent`, one trigger that fires when the first of those events
is set (at once if one already is); anything else goes to cocotb's ``First`` unchanged. The
waiting task resumes as it did, when the first event is set; it no longer waits for a waiter
task to be scheduled in between. The transmit loop names ``First`` as a global of
``cocotbext.pcie.core.port``, so :func:`~.upstream_speed.install` puts :func:`first` there.

:class:`FastSimPort`, upstream's :class:`~cocotbext.pcie.core.port.SimPort` with two changes:

* A ``SimPort`` puts each packet on the wire for its serialisation time and then starts a task
  that waits the link's delay and hands it to the other end: a task made, run and ended per
  packet. ``FastSimPort.handle_tx`` puts the packet, with the simulated step it is due at the
  other end, on the port's :class:`DeliveryLine`: one task per port that waits for each packet's
  step in turn and hands it over, in the same step upstream's task would. The packets of one
  direction leave one after another (the transmit task serialises them) and the delay is the
  port's constant, so they arrive in the order sent, each at least a step after the one before.
* Each port starts a task per TLP it receives (its ACK latency timer) and per credit release
  (its UpdateFC timer), each waiting one timer and then setting an event. ``FastSimPort`` runs
  both as :class:`StepTimer` s: the same timer, its callback setting the same event, no task;
  ``done()`` and ``kill()`` answer as the task did (upstream's ``stop_*`` methods use them).

cocotbext-pcie builds its ports itself (a ``Device``, a switch's or a root's bridges), so
:func:`~.upstream_speed.install` has it build ``FastSimPort`` s.
"""

from __future__ import annotations

from collections import deque

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import Event, First, Timer
from cocotbext.pcie.core.port import SimPort

from .trigger_callbacks import EVENT_WAIT, FirstEvent, call_when

__all__ = ["first", "UPSTREAM_FIRST", "DeliveryLine", "StepTimer", "FastSimPort"]

#: cocotb's ``First``, which :func:`first` falls back to.
UPSTREAM_FIRST = First


def first(*awaitables):
    """:class:`~.trigger_callbacks.FirstEvent` when every awaitable is an ``Event.wait()``, else
    cocotb's ``First``."""
    if awaitables and all(type(a) is EVENT_WAIT for a in awaitables):
        return FirstEvent(a._parent for a in awaitables)
    return UPSTREAM_FIRST(*awaitables)


class DeliveryLine:
    """The wire from one :class:`FastSimPort` to the other end: packets handed over in order,
    each at the simulated step it is due.

    Parameters
    ----------
    port : SimPort
        The sending port (its ``other`` receives, through ``ext_recv``).
    """

    def __init__(self, port: SimPort) -> None:
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


class StepTimer:
    """Calls ``action`` after ``steps`` simulated steps (a timer's callback, no task); stands in
    for the timer tasks of a cocotbext-pcie port, whose ``done()`` and ``kill()`` it answers.

    Parameters
    ----------
    steps : int
    action : callable
    """

    __slots__ = ("_action", "_handle", "_done")

    def __init__(self, steps: int, action) -> None:
        self._action, self._done = action, False
        self._handle = call_when(Timer(steps, "step"), self._fire)

    def _fire(self) -> None:
        self._done = True
        self._action()

    def done(self) -> bool:
        return self._done

    def kill(self) -> None:
        if not self._done:
            self._done = True
            self._handle.cancel()


class FastSimPort(SimPort):
    """Upstream's ``SimPort``, delivering packets from one task per port and running its ACK
    latency and UpdateFC timers as :class:`StepTimer` s (no task per packet or per timer).

    Parameters
    ----------
    fc_init
        As upstream's: the receive credits the port advertises.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._line: DeliveryLine | None = None  # made on the first packet, when cocotb runs

    async def handle_tx(self, pkt) -> None:
        """The packet's serialisation time (upstream's), then onto the :class:`DeliveryLine`."""
        await Timer(max(int(pkt.get_wire_size() * self.symbol_period * self.time_scale), 1),
                    "step")
        if self._line is None:
            self._line = DeliveryLine(self)
        self._line.send(pkt, get_sim_time("step") + max(self.link_delay_steps, 1))

    def start_ack_latency_timer(self) -> None:
        """Upstream's, with a :class:`StepTimer`."""
        timer = self._ack_latency_timer_cr
        if timer is not None and not timer.done():
            return  # already running

        def expired() -> None:
            if not self.nak_scheduled:
                self.send_ack.set()

        self._ack_latency_timer_cr = StepTimer(self._latency_steps(), expired)

    def start_fc_update_timer(self) -> None:
        """Upstream's, with a :class:`StepTimer`."""
        timer = self._fc_update_timer_cr
        if timer is not None and not timer.done():
            return  # already running
        self._fc_update_timer_cr = StepTimer(self._latency_steps(), self.send_fc.set)

    def _latency_steps(self) -> int:
        return max(self.max_latency_timer_steps, 1)
