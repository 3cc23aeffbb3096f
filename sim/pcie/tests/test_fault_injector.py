"""The fault injector and the guard model without a simulator: each fault is the fault it says.

The Verilator tests (``test_pcie_faults.py``) trust the model's expected counts; here the model
is checked against hand-written expectations for every kind of fault the injector makes.
"""

from __future__ import annotations

import pytest
from busprobe.sim.pcie.faults import FATAL, STRAY, FaultInjector, completion_for
from busprobe.sim.pcie.guard_model import GuardModel
from busprobe.sim.pcie.tlp_stream import RawPacket
from cocotbext.pcie.core.tlp import Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId

ME = 0x0100
ADDRESS = 0x1000_0200


def read(tag: int, nbytes: int) -> Tlp:
    tlp = Tlp()
    tlp.fmt_type = TlpType.MEM_READ
    tlp.requester_id = PcieId.from_int(ME)
    tlp.tag = tag
    tlp.set_addr_be(ADDRESS, nbytes)
    return tlp


def split_read(tag: int):
    """A 512-byte read answered in two 256-byte completions, as the root does at MPS 256."""
    data = bytes(range(256)) * 2
    return [completion_for(ME, tag, data[:256], lower=ADDRESS, byte_count=512),
            completion_for(ME, tag, data[256:], lower=ADDRESS + 256, byte_count=256)]


def fresh(**rates):
    model = GuardModel(ME, 256)
    return model, FaultInjector(model, seed=1, **rates)


def test_clean_reads_pass_and_retire_their_tag():
    model, injector = fresh()
    model.request(read(3, 512))
    first, second = split_read(3)
    assert injector.filter(first) == [first] and injector.filter(second) == [second]
    assert model.counts == {} and model.reads == {} and model.failures == 0
    assert injector.filter(first) == [first] and model.counts == {"rd_cpl_unexpected": 1}


EXPECTED = {"poisoned": "rx_poisoned", "status_ur": "rd_cpl_status",
            "status_ca": "rd_cpl_status", "byte_count": "rd_cpl_mismatch",
            "lower_address": "rd_cpl_mismatch", "length": "rd_cpl_mismatch",
            "truncated": "rx_malformed", "overlong": "rx_malformed"}


@pytest.mark.parametrize("kind", FATAL)
@pytest.mark.parametrize("piece", [0, 1])
def test_every_fatal_fault_fails_its_read_once(kind, piece):
    for seed in range(20):  # the random parts of each fault
        model, injector = fresh()
        injector.rng.seed(seed)
        model.request(read(5, 512))
        completions = split_read(5)
        out = injector._fault(kind, completions[piece])
        for item in [*completions[:piece], *out, *completions[piece + 1:]]:
            model.receive(item)
        if kind == "dropped" and piece == 0:
            # The second piece then says fewer bytes are left than the read expects.
            assert out == [] and model.counts == {"rd_cpl_mismatch": 1}
        elif kind == "dropped":
            assert out == [] and model.expire() == 1
            assert model.counts == {"rd_cpl_timeouts": 1}
        else:
            expected = {EXPECTED[kind]: 1}
            if piece == 0:
                expected["rd_cpl_discarded"] = 1
            assert model.counts == expected, (kind, seed)
            assert model.expire() == 0
        assert model.failures == 1
        assert not out or isinstance(out[0], RawPacket) == (kind in ("truncated", "overlong"))


@pytest.mark.parametrize("kind", STRAY)
def test_strays_are_counted_and_harm_no_read(kind):
    model, injector = fresh()
    model.request(read(2, 512))
    first, second = split_read(2)
    model.receive(injector._stray(kind, first))
    for item in (first, second):
        assert model.receive(item) is None
    expected = "rx_malformed" if kind == "fragment" else "rd_cpl_unexpected"
    assert model.counts == {expected: 1} and model.failures == 0 and model.reads == {}


def test_unsolicited_completions_are_unexpected():
    model, injector = fresh()
    for tag in range(8):
        model.receive(injector.unsolicited(tag))
    assert model.counts == {"rd_cpl_unexpected": 8} and injector.injected["unsolicited"] == 8


def test_the_same_seed_makes_the_same_faults():
    runs = []
    for _ in range(2):
        model, injector = fresh(fault_rate=0.5, stray_rate=0.5)
        for tag in range(8):
            model.request(read(tag, 512))
            for cpl in split_read(tag):
                injector.filter(cpl)
        runs.append((dict(injector.injected), dict(model.counts)))
    assert runs[0] == runs[1] and sum(runs[0][0].values()) > 4
    assert injector.answered
