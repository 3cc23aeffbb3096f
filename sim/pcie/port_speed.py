"""cocotbext-pcie's link ports, waking their transmit task without three tasks per wait
(simulation speed).

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
"""

from __future__ import annotations

from cocotb.triggers import Event, First, Trigger

__all__ = ["install", "first", "FirstEvent", "UPSTREAM_FIRST"]

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


def install() -> None:
    """Give cocotbext-pcie's ports :func:`first` for ``First`` (idempotent)."""
    from cocotbext.pcie.core import port

    port.First = first
