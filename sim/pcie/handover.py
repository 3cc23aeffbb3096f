"""An untimed PCIe link without a data link layer: the switch-to-root hop of ``endpoints=N``.

cocotbext-pcie links two ports with a pair of :class:`~cocotbext.pcie.core.port.SimPort` s: each
TLP gets a sequence number, a copy, a retry-buffer entry, an ACK DLLP back and an UpdateFC DLLP
for its credits, and every packet a task and a timer. A link with no speed set
(``max_link_speed`` None) is untimed (each packet takes one simulator step), but all of that
still runs: behind the switch of :class:`~busprobe.sim.pcie.multi_top.SwitchedBench` it was most
of why two endpoints cost over 3x one (issue 30, DESIGN §5.3 "Simulation speed").

:class:`HandOverPort` stands in for *both* ends of such a link, in the one place this workaround
of upstream's link model lives. It keeps what the simulation's figures depend on and drops the
rest:

* **Flow control is kept.** Each end advertises receive credits as a ``SimPort`` would (the
  same ``fc_init``, accounted by upstream's :class:`~cocotbext.pcie.core.port.FcChannelState`);
  the sender waits until the receiver has room for a TLP and consumes it; the receiver's
  ``release_fc`` (e.g. the capped root absorbing a write, :mod:`.chipset`) gives it back at
  once, where a ``SimPort`` would send an UpdateFC DLLP a step or two later. So the root's cap
  still holds the switch back, and the switch its endpoints' links, exactly as before.
* **Order is kept.** The receiver takes TLPs in the order sent, one at a time, in a task of its
  own (as ``SimPort``'s receive queue does), so a sender never waits for the receiver's routing.
* **Dropped:** sequence numbers, ACK/NAK, the retry buffer, DLLPs and their timers, and the copy
  of each TLP (the sender lets go of it once handed over). The link has no timing to lose; the
  one or two simulator steps (picoseconds) a ``SimPort`` pair spent per packet are gone.

The ports plug into upstream's bridges through the bridges' own hooks (a root port's
``set_downstream_port``, a switch upstream port's ``set_upstream_port``: each sets ``log``,
``parent`` and ``rx_handler`` and sends through :meth:`send`); :func:`connect_switch_to_root`
does both.
"""

from __future__ import annotations

from cocotb.triggers import Event
from cocotbext.pcie.core.dllp import FcType
from cocotbext.pcie.core.port import FcChannelState

__all__ = ["HandOverPort", "connect_switch_to_root", "SWITCH_FC_INIT"]

#: The receive credits upstream's switch and root ports advertise (``SwitchUpstreamPort`` /
#: ``SwitchDownstreamPort``: PH, PD, NPH, NPD, CplH, CplD): 64 headers, 16 KiB of data.
SWITCH_FC_INIT = (64, 1024, 64, 64, 64, 1024)


class HandOverPort:
    """One end of an untimed link that hands each TLP to the other end directly.

    Parameters
    ----------
    fc_init : sequence of int
        The receive credits this end advertises (:data:`SWITCH_FC_INIT`; 0 is infinite).

    Attributes
    ----------
    other : HandOverPort or None
        The other end, once connected.
    rx_handler
        The coroutine function given each received TLP (set by the bridge that owns the port).
    """

    def __init__(self, fc_init=SWITCH_FC_INIT) -> None:
        self.log = None
        self.parent = None
        self.rx_handler = None
        self.other: HandOverPort | None = None
        self._credits_returned = Event()
        self._rx_fc = FcChannelState(list(fc_init), self._credits_returned.set)

    def connect(self, other) -> None:
        """Connect to ``other``: a :class:`HandOverPort`, or a bridge or switch owning one."""
        if not isinstance(other, HandOverPort):
            other.connect(self)  # a bridge or switch connects its own port back to this one
            return
        if self.other is not None or other.other is not None:
            raise RuntimeError("a hand-over port is connected once")
        self.other, other.other = other, self

    def _has_room(self, tlp) -> bool:
        fc_type, data = tlp.get_fc_type(), tlp.get_data_credits()
        fc = self._rx_fc
        # An if chain, not a dict built per TLP: each FcType hash is a Python call (issue 30).
        if fc_type is FcType.P:
            head, body = fc.ph, fc.pd
        elif fc_type is FcType.NP:
            head, body = fc.nph, fc.npd
        else:
            head, body = fc.cplh, fc.cpld
        return head.rx_credits_available > 0 and body.rx_credits_available >= data

    async def send(self, tlp) -> None:
        """Give the previous hop its credits back, wait for room at the other end, hand over."""
        tlp.release_fc()
        other = self.other
        if other is None:
            raise RuntimeError("hand-over port not connected")
        while not other._has_room(tlp):
            other._credits_returned.clear()
            await other._credits_returned.wait()
        other._rx_fc.rx_process_tlp_fc(tlp)  # consumes; release_fc_cb returns them here
        await other.rx_handler(tlp)


def connect_switch_to_root(switch, rc, fc_init=SWITCH_FC_INIT):
    """Connect ``switch``'s upstream port to a new root port of ``rc`` by a hand-over link;
    return the root port (its bridge)."""
    root_port = rc.make_port()
    built = switch.upstream_bridge.upstream_port, root_port.downstream_port
    upstream, downstream = HandOverPort(fc_init), HandOverPort(fc_init)
    switch.upstream_bridge.set_upstream_port(upstream)
    root_port.set_downstream_port(downstream)
    upstream.connect(downstream)
    # Each bridge built a SimPort of its own, whose tasks (started in its constructor, with no
    # handle to stop them) would fail on sending their flow-control DLLPs into nothing: the two
    # are connected to each other, exchange their InitFC DLLPs and then sit idle, never carrying
    # a TLP. Their idle timers (an UpdateFC round every 10 us, waking the simulator's Python 30
    # times a 285 us point) are set before the timer tasks first run to wait a simulated hour.
    for port in built:
        port.fc_idle_timer_steps = 3600 * port.time_scale  # time_scale: steps a second
    built[0].connect(built[1])
    return root_port
