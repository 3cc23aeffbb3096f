"""cocotbext-pcie's routing checks, quicker for the TLPs a DMA stream is made of (simulation speed).

Every bridge a TLP crosses asks, on receiving and on routing it, ``Function.match_tlp`` (is it
for this function?) and ``Bridge.match_tlp_secondary`` (is it for the bus behind this bridge?);
a switch asks them again of each port while it looks for the egress. Upstream's versions compare
``tlp.fmt_type`` with set literals of :class:`~cocotbext.pcie.core.tlp.TlpType` members, built
anew at each call: ~15 Python-level enum hashes a call, six or more calls a hop. Profiled
(issue 30, DESIGN §5.3 "Simulation speed"), these were the largest part of what two endpoints
behind ``sim:pcie?endpoints=N``'s switch cost over twice one endpoint: the switch's bridges
route every TLP once more than the root port alone does.

:class:`FastMatch` (for any function) and :class:`FastRouting` (for bridges) override those
methods: a TLP whose ``(fmt, type)`` is a memory read or write, or a completion (the TLPs of a
DMA stream), is answered from a table keyed by that pair, by the comparison upstream makes for
it (the bridge's memory windows or secondary bus range; the function's BARs or ID); every other
TLP (configuration, I/O, messages, and pairs that are no type) goes to upstream's method
unchanged. ``test_route_speed.py`` checks the answers against upstream's for every type over
bridge and function settings. The bridges of the simulated fabric are upstream's with
:class:`FastRouting` mixed in (:class:`FastHostBridge`, :class:`FastRootPort`,
:class:`FastSwitchUpstreamPort`, :class:`FastSwitchDownstreamPort`): :class:`DirectSwitch` and
:class:`~.chipset.ChipsetRootComplex` build them, and the one the root complex's constructor
builds itself is :func:`~.upstream_speed.install`'s.
"""

from __future__ import annotations

from cocotbext.pcie.core.bridge import (
    HostBridge,
    RootPort,
    SwitchDownstreamPort,
    SwitchUpstreamPort,
)
from cocotbext.pcie.core.switch import Switch
from cocotbext.pcie.core.tlp import TlpType
from cocotbext.pcie.core.utils import PcieId

__all__ = ["FastMatch", "FastRouting", "FastHostBridge", "FastRootPort", "FastSwitchUpstreamPort",
           "FastSwitchDownstreamPort", "DirectRouting", "DirectSwitch"]

_MEM, _CPL = 1, 2
#: ``(fmt, type)`` of the TLPs answered here (keys as ``TlpType``'s own value table has them).
_KIND = {**{member.value: _MEM for member in (TlpType.MEM_READ, TlpType.MEM_READ_64,
                                                TlpType.MEM_WRITE, TlpType.MEM_WRITE_64)},
         **{member.value: _CPL for member in (TlpType.CPL, TlpType.CPL_DATA, TlpType.CPL_LOCKED,
                                                TlpType.CPL_LOCKED_DATA)}}
_NO_ID = PcieId(0, 0, 0)


class FastMatch:
    """A cocotbext-pcie :class:`~cocotbext.pcie.core.function.Function` whose ``match_tlp``
    answers memory requests and completions from a table.

    Mix in before the function class: ``class Fast(FastMatch, Endpoint)``.
    """

    def match_tlp(self, tlp, _kind=_KIND.get) -> bool:
        kind = _kind((tlp.fmt, tlp.type))
        if kind == _MEM:
            return bool(self.match_bar(tlp.address))
        if kind == _CPL:
            return self.pcie_id == tlp.requester_id
        return super().match_tlp(tlp)


class FastRouting(FastMatch):
    """A cocotbext-pcie :class:`~cocotbext.pcie.core.bridge.Bridge` whose ``match_tlp`` and
    ``match_tlp_secondary`` answer memory requests and completions from a table, and whose
    ``downstream_recv`` sends such a TLP on up without upstream's configuration-request test.

    Mix in before the bridge class: ``class FastRootPort(FastRouting, RootPort)``.
    """

    def match_tlp_secondary(self, tlp, _kind=_KIND.get) -> bool:
        kind = _kind((tlp.fmt, tlp.type))
        if kind == _MEM:
            address = tlp.address
            return (self.mem_base <= address <= self.mem_limit
                    or self.prefetchable_mem_base <= address <= self.prefetchable_mem_limit)
        if kind == _CPL:
            requester = tlp.requester_id
            return self.sec_bus_num <= requester.bus <= self.sub_bus_num and requester != _NO_ID
        return super().match_tlp_secondary(tlp)

    async def downstream_recv(self, tlp, _kind=_KIND.get) -> None:
        # Upstream's first test (is it a configuration request?) builds a set of four TlpType
        # members per call, and a TLP going up crosses a bridge per switch port and root port.
        # A memory request or completion, not poisoned, that the bridge neither claims nor
        # routes to its secondary side goes up as upstream sends it; anything else (and a
        # TLP a bridge claims or keeps) is upstream's method's, which checks it all again.
        if _kind((tlp.fmt, tlp.type)) is None or tlp.ep:
            await super().downstream_recv(tlp)
            return
        self.log.debug("Routing upstream TLP: %r", tlp)
        assert tlp.check()
        if self.root or not (self.match_tlp(tlp) or self.match_tlp_secondary(tlp)):
            await self.upstream_send(tlp)
            return
        await super().downstream_recv(tlp)


class FastHostBridge(FastRouting, HostBridge):
    """Upstream's root complex host bridge, routing by :class:`FastRouting`."""


class FastRootPort(FastRouting, RootPort):
    """Upstream's root port, routing by :class:`FastRouting`."""


class FastSwitchUpstreamPort(FastRouting, SwitchUpstreamPort):
    """Upstream's switch upstream port, routing by :class:`FastRouting`."""


class FastSwitchDownstreamPort(FastRouting, SwitchDownstreamPort):
    """Upstream's switch downstream port, routing by :class:`FastRouting`."""


class DirectRouting:
    """A cocotbext-pcie :class:`~cocotbext.pcie.core.Switch` (or root complex, which is one)
    that routes each TLP in the task that hands it in, instead of in a routing task per port.

    Upstream's switch gives every port an ingress queue of one TLP and a task that takes each
    TLP from it, asks the other ports' bridges where it goes (``_run_routing``) and queues it for
    that port's arbitration task, which sends it on. The routing task is a wake-up per TLP per
    switch with nothing to wait for (the queues it feeds are unbounded); behind
    ``sim:pcie?endpoints=N``'s switch a TLP crosses two switches (the switch, then the root
    complex) where on ``sim:pcie`` it crosses one. Here each port's bridge hands its TLP to
    :meth:`_route`, which asks the same questions in the same order and queues it for the same
    arbitration task at once, in the same simulated instant; the arbitration (the order in which
    ports' TLPs go out, one at a time) is upstream's, unchanged. A TLP no port claims goes into
    the ingress queue as before, so upstream's routing task reports it (and answers it with an
    Unsupported Request completion) as it always did.

    Mix in before the switch class: ``class DirectSwitch(DirectRouting, Switch)``.
    """

    def add_switch_port(self, port) -> None:
        super().add_switch_port(port)
        self._route_directly(port)

    def set_upstream_bridge(self, bridge) -> None:
        super().set_upstream_bridge(bridge)
        self._route_directly(self.upstream_port)

    def _route_directly(self, port) -> None:
        async def route(tlp, port=port) -> None:
            await self._route(port, tlp)

        # The hooks upstream's SwitchPort.upstream / .downstream pointed at the ingress queue.
        if port.upstream:
            port.bridge.downstream_tx_handler = route
        else:
            port.bridge.upstream_tx_handler = route

    async def _route(self, port, tlp) -> None:
        # Upstream's Switch._run_routing (cocotbext-pcie 0.2.16), less its task: the first other
        # port whose bridge claims the TLP, or whose secondary side does (downstream ports) or
        # does not (the upstream port), gets it.
        tlp.ingress_port = port.bridge
        for other, tx_queue in port.tx_queues:
            bridge = other.bridge
            if bridge.match_tlp(tlp) or bridge.match_tlp_secondary(tlp) != other.upstream:
                await self._deliver(other, tx_queue, tlp)
                return
        await port.ingress_queue.put(tlp)

    async def _deliver(self, other, tx_queue, tlp) -> None:
        """Queue ``tlp`` for port ``other``'s arbitration task (from this port's queue)."""
        tx_queue.put_nowait(tlp)  # unbounded: upstream's ``await put`` never waits
        other.rx_event.set()


class DirectSwitch(DirectRouting, Switch):
    """Upstream's :class:`~cocotbext.pcie.core.Switch`, routing without a task hop, and sending a
    TLP bound for its upstream port at once when that port is idle (cut-through); its bridges
    route by :class:`FastRouting`.

    Behind ``sim:pcie?endpoints=N`` every DMA TLP of every endpoint crosses this switch towards
    the root. Upstream queues it for the upstream port's arbitration task, which wakes (a task
    resume and an event per TLP per switch) only to find that port idle and send it. Here, when
    the upstream port is sending nothing and has nothing queued, the routing task sends the TLP
    itself, in the same simulated instant, through the same handler (the upstream bridge, then
    the untimed link to the root, :mod:`.handover`); otherwise the TLP is queued as upstream
    queues it and the arbitration below sends it. Only the direction in which a busy egress can
    hold nothing else back is cut through: everything a downstream port receives goes up, so a
    send waiting for the root's credits holds back only that port's own later TLPs, which would
    wait in the queue behind it anyway (they keep their link credits either way, so the
    endpoint's link sees the same back-pressure). TLPs going down (completions, MMIO) are queued
    as upstream does, where a full link to one endpoint never delays another's.

    The arbitration is upstream's loop (every non-empty queue in port order, one TLP each, until
    all are empty) with one addition: a port has one sender at a time, the cut-through or the
    arbitration task, named by ``SwitchPort.sending``; a cut-through that finds TLPs queued
    behind it when done wakes the arbitration task to send them.
    """

    def __init__(self, *args, **kwargs) -> None:
        # Upstream's Switch builds its bridges from these when they are set before it runs.
        self.default_upstream_bridge = FastSwitchUpstreamPort
        self.default_downstream_bridge = FastSwitchDownstreamPort
        super().__init__(*args, **kwargs)

    def add_switch_port(self, port) -> None:
        port.sending = False
        super().add_switch_port(port)

    async def _deliver(self, other, tx_queue, tlp) -> None:
        if not (other.upstream and not other.sending and _all_empty(other.rx_queues)):
            await super()._deliver(other, tx_queue, tlp)
            return
        other.sending = True
        try:
            await other.tx_handler(tlp)
        finally:
            other.sending = False
        if not _all_empty(other.rx_queues):
            other.rx_event.set()

    async def _run_arbitration(self, port) -> None:
        while True:
            await port.rx_event.wait()
            port.rx_event.clear()
            if port.sending:  # a cut-through is sending; it wakes this task when done
                continue
            port.sending = True
            try:
                sent = True
                while sent:
                    sent = False
                    for rx_queue in port.rx_queues:
                        if not rx_queue.empty():
                            await port.tx_handler(rx_queue.get_nowait())
                            sent = True
            finally:
                port.sending = False


def _all_empty(queues) -> bool:
    for queue in queues:
        if not queue.empty():
            return False
    return True
