"""Callbacks on cocotb triggers without a task: the one place the PCIe simulation uses cocotb's
private trigger API (simulation speed).

cocotb 2 (checked against 2.1.0, the version ``pyproject.toml`` installs) has no public way to
run a function when a trigger fires, or to wait for the first of several events, without a task:
:class:`~cocotb.triggers.First` runs each awaitable in a task of its own, and a timer's action
needs a task to ``await`` it. Per TLP the ports of cocotbext-pcie wait for the first of three
events two or three times and start two timers, so those tasks were one of the largest costs of
every PCIe simulation in the profile (issue 30, DESIGN §5.3 "Simulation speed").

What this module relies on, all of cocotb 2.x's ``cocotb/_base_triggers.py``:

* ``Trigger._register(func)`` adds ``func`` to the trigger's callbacks and returns a handle
  whose ``cancel()`` removes it; the first callback registered primes the trigger
  (``_prime()``), the last one removed unprimes it (``_unprime()``);
* a trigger that fires calls ``_react()``, which runs and forgets every callback;
* ``Event.wait()`` returns one trigger per event (fired by ``set()``, at once when primed on an
  event already set), and ``Timer`` fires at its simulated time.

``tests/test_port_speed.py`` exercises each of these, so a cocotb that changes them fails there
and not in a simulation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from cocotb.triggers import Event, Trigger

__all__ = ["call_when", "FirstEvent", "EVENT_WAIT"]

#: The type of the trigger ``Event.wait()`` returns (cocotb keeps its class private).
EVENT_WAIT = type(Event().wait())


def call_when(trigger: Trigger, func: Callable[[], object]):
    """Call ``func`` (no task) when ``trigger`` fires; returns a handle whose ``cancel()``
    withdraws the call."""
    return trigger._register(func)


class FirstEvent(Trigger):
    """Fires when the first of ``events`` is set (at once when primed if one already is).

    Parameters
    ----------
    events : iterable of Event
    """

    def __init__(self, events: Iterable[Event]) -> None:
        super().__init__()
        self._events = tuple(events)
        self._handles: list = []

    def _prime(self) -> None:
        for event in self._events:
            if event.is_set():
                self._react()
                return
        self._handles = [call_when(event.wait(), self._fire) for event in self._events]

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
