"""The wait for the first of several events that :func:`busprobe.sim.pcie.port_speed.first`
gives cocotbext-pcie's ports: one trigger, which fires once, for the first event set (at once
when one already is), and lets go of the others; anything but events still goes to cocotb's
``First``. These also exercise the cocotb trigger API :mod:`busprobe.sim.pcie.trigger_callbacks`
relies on."""

from __future__ import annotations

from busprobe.sim.pcie.port_speed import UPSTREAM_FIRST, FastSimPort, first
from busprobe.sim.pcie.trigger_callbacks import FirstEvent, call_when
from cocotb.triggers import Event, NullTrigger
from cocotbext.pcie.core.port import SimPort


def _waiting(events: list[Event]) -> tuple[FirstEvent, list[str]]:
    trigger, fired = first(*(event.wait() for event in events)), []
    call_when(trigger, lambda: fired.append("fired"))  # as a task awaiting it registers
    return trigger, fired


def test_fires_once_when_the_first_event_is_set_and_lets_go_of_the_others():
    events = [Event(), Event(), Event()]
    trigger, fired = _waiting(events)
    assert isinstance(trigger, FirstEvent) and fired == []
    events[1].set()
    assert fired == ["fired"]
    events[0].set()
    events[2].set()
    assert fired == ["fired"]  # not again: its callbacks on the other events were cancelled
    assert all(not event.wait()._callbacks for event in events)


def test_fires_at_once_when_an_event_is_already_set():
    events = [Event(), Event()]
    events[1].set()
    _, fired = _waiting(events)
    assert fired == ["fired"]
    events[0].set()
    assert fired == ["fired"]


def test_a_cleared_event_does_not_fire_it_and_a_new_wait_sees_the_next_set():
    events = [Event(), Event()]
    events[0].set()
    events[0].clear()
    _, fired = _waiting(events)
    assert fired == []
    events[0].set()
    assert fired == ["fired"]


def test_a_withdrawn_wait_never_fires():
    events = [Event(), Event()]
    trigger = first(*(event.wait() for event in events))
    fired: list[str] = []
    call_when(trigger, lambda: fired.append("fired")).cancel()  # as a killed task does
    events[0].set()
    assert fired == [] and all(not event.wait()._callbacks for event in events)


def test_anything_but_event_waits_goes_to_cocotbs_first():
    assert isinstance(first(NullTrigger(), Event().wait()), UPSTREAM_FIRST)


def test_the_fast_port_is_upstreams_with_its_delivery_and_timers_replaced():
    assert issubclass(FastSimPort, SimPort)
    replaced = {"handle_tx", "start_ack_latency_timer", "start_fc_update_timer"}
    assert replaced <= set(vars(FastSimPort))
    assert all(name in vars(SimPort) or hasattr(SimPort, name) for name in replaced)
