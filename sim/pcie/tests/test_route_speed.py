"""cocotbext-pcie's routing checks with :class:`~busprobe.sim.pcie.route_speed.FastRouting` and
:class:`~busprobe.sim.pcie.route_speed.FastMatch` mixed in: for every TLP type, over bridges'
windows and bus ranges and endpoints' BARs and IDs, the same answer (or the same exception) as
upstream's ``match_tlp_secondary``, ``match_tlp`` and ``downstream_recv`` on the same object."""

from __future__ import annotations

import itertools

from busprobe.sim.pcie.route_speed import (
    FastHostBridge,
    FastMatch,
    FastRootPort,
    FastRouting,
    FastSwitchDownstreamPort,
    FastSwitchUpstreamPort,
)
from cocotbext.pcie.core.bridge import (
    Bridge,
    HostBridge,
    RootPort,
    SwitchDownstreamPort,
    SwitchUpstreamPort,
)
from cocotbext.pcie.core.endpoint import Endpoint
from cocotbext.pcie.core.function import Function
from cocotbext.pcie.core.tlp import Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId


class _FastBridge(FastRouting, Bridge):
    """A bare bridge (upstream's switch and root ports build link ports, which need cocotb)."""


class _FastEndpoint(FastMatch, Endpoint):
    pass


_IDS = [PcieId(0, 0, 0), PcieId(1, 0, 0), PcieId(2, 3, 1), PcieId(5, 0, 0)]
_ADDRESSES = [0x0, 0xFFF, 0x1000, 0x8000_0000, 0x800F_FFFF, 0x8010_0000, 0xC000_0000,
              0x1_0000_0000]


def _answer(method, owner, tlp):
    try:
        return method(owner, tlp)
    except Exception as exc:  # upstream's own exception is part of the answer
        return type(exc), str(exc)


def _tlps():
    for member in TlpType:
        for address, requester, completer in itertools.product(_ADDRESSES, _IDS, _IDS[:2]):
            tlp = Tlp()
            tlp.fmt, tlp.type = int(member.value[0]), member.value[1]  # as unpacked: plain ints
            tlp.address, tlp.requester_id, tlp.completer_id = address, requester, completer
            yield tlp


def _bridges():
    for sec, sub, window in [(0, 0, (0, 0xFFFFF)), (1, 1, (0x8000_0000, 0x800F_FFFF)),
                             (2, 5, (0xC000_0000, 0xC00F_FFFF)), (1, 255, (0x10_0000, 0xF_FFFF))]:
        bridge = _FastBridge()
        bridge.sec_bus_num, bridge.sub_bus_num = sec, sub
        bridge.mem_base, bridge.mem_limit = window
        bridge.prefetchable_mem_base, bridge.prefetchable_mem_limit = 0x1_0000_0000, 0x1_000F_FFFF
        yield bridge


def _endpoints():
    for pcie_id, bar in [(PcieId(0, 0, 0), None), (PcieId(1, 0, 0), 0x8000_0000),
                         (PcieId(2, 3, 1), 0x1000)]:
        endpoint = _FastEndpoint()
        endpoint.pcie_id = pcie_id
        if bar is not None:
            endpoint.configure_bar(0, 4096)
            endpoint.bar[0] = bar
        yield endpoint


def test_match_tlp_secondary_gives_upstreams_answer_for_every_type_window_and_bus_range():
    tlps = list(_tlps())
    for bridge in _bridges():
        for tlp in tlps:
            assert (_answer(type(bridge).match_tlp_secondary, bridge, tlp)
                    == _answer(Bridge.match_tlp_secondary, bridge, tlp)), (tlp, bridge)


def test_match_tlp_gives_upstreams_answer_for_every_type_bar_and_id():
    tlps = list(_tlps())
    for function in [*_endpoints(), *_bridges()]:
        for tlp in tlps:
            assert (_answer(type(function).match_tlp, function, tlp)
                    == _answer(Function.match_tlp, function, tlp)), (tlp, function)


def test_the_fast_path_answers_both_ways():
    # A test that could pass with every answer False would prove nothing: each of the table's
    # kinds answers True and False over the settings above.
    kinds = {(int(m.value[0]), m.value[1]) for m in (TlpType.MEM_WRITE, TlpType.MEM_READ_64,
                                                      TlpType.CPL_DATA)}
    tlps = [tlp for tlp in _tlps() if (tlp.fmt, tlp.type) in kinds]
    seen = {(tlp.fmt, tlp.type, bridge.match_tlp_secondary(tlp))
            for bridge in _bridges() for tlp in tlps}
    seen |= {(tlp.fmt, tlp.type, ep.match_tlp(tlp)) for ep in _endpoints() for tlp in tlps}
    for fmt, kind in kinds:
        assert (fmt, kind, True) in seen and (fmt, kind, False) in seen, (fmt, kind)


def _run(coroutine) -> None:
    """Run a coroutine that never waits on the simulator (the handlers below do not)."""
    try:
        coroutine.send(None)
    except StopIteration:
        return
    raise AssertionError("the coroutine waited on a trigger")


def _where_it_went(method, bridge: Bridge, tlp: Tlp) -> list:
    went: list = []

    async def record(where: str, sent) -> None:
        went.append((where, int(sent.fmt), sent.type, sent.status))

    bridge.upstream_tx_handler = lambda t: record("up", t)
    bridge.downstream_tx_handler = lambda t: record("down", t)
    bridge.handle_tlp = lambda t: record("claimed", t)
    try:
        _run(method(bridge, tlp))
    except Exception as exc:  # upstream's own exception is part of the answer
        went.append((type(exc), str(exc)))
    return went


def test_downstream_recv_sends_every_tlp_where_upstreams_does():
    # Each TLP from the secondary side: up, claimed by the bridge, or refused (an Unsupported
    # Request completion back down, or dropped), for root and switch bridges, over windows,
    # bus ranges and the bridge's own BAR, poisoned or not.
    tlps = list(_tlps())
    outcomes = set()
    for bridge, root, poisoned in itertools.product(_bridges(), (False, True), (False, True)):
        bridge.root = root
        bridge.pcie_id = PcieId(0, 1, 0)
        bridge.configure_bar(0, 4096)
        bridge.bar[0] = 0xC000_0000
        for tlp in tlps:
            tlp.ep = poisoned
            ours = _where_it_went(_FastBridge.downstream_recv, bridge, Tlp(tlp))
            theirs = _where_it_went(Bridge.downstream_recv, bridge, Tlp(tlp))
            assert ours == theirs, (tlp, bridge.root, poisoned)
            outcomes.add(ours[0][0] if ours else None)
    assert {"up", "claimed", "down", None} <= outcomes  # every way, so the test can fail


def test_the_fabrics_bridges_are_upstreams_routing_by_table():
    for fast, upstream in [(FastHostBridge, HostBridge), (FastRootPort, RootPort),
                           (FastSwitchUpstreamPort, SwitchUpstreamPort),
                           (FastSwitchDownstreamPort, SwitchDownstreamPort)]:
        assert issubclass(fast, upstream)
        for name in ("match_tlp", "match_tlp_secondary", "downstream_recv"):
            assert getattr(fast, name) is getattr(FastRouting, name), (fast, name)
