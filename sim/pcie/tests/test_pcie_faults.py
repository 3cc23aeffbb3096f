"""The PCIe core behind a hostile root complex (pcie_fault_cocotb.py): issue 13.

Directed cases: every fault class once, with the counts it must move written out here, each
followed by the host's recovery (read reset) and a clean read and write. They run one after
the other in one simulation (one result per case), so every case also starts from the state
the previous one left. The bounded fuzz runs in ``make test``; ``make bench`` runs a long one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
COCOTB_MODULE = "pcie_fault_cocotb"
READ = 2048  # as in pcie_fault_cocotb: 4 reads of 512 B, completions 0..7 (2 per read)

FAILS = True
#: name -> (fault, completion it hits, counts it must move, the read fails). Completion 2 is the
#: first of read 1's two: the rest of that read is then discarded; completion 3 is its last.
CASES = {
    "poisoned completion": ("poisoned", 2, {"rx_poisoned": 1, "rd_cpl_discarded": 1}, FAILS),
    "completion status UR": ("status_ur", 2, {"rd_cpl_status": 1, "rd_cpl_discarded": 1},
                             FAILS),
    "completion status CA": ("status_ca", 3, {"rd_cpl_status": 1}, FAILS),
    "wrong byte count": ("byte_count", 2, {"rd_cpl_mismatch": 1, "rd_cpl_discarded": 1}, FAILS),
    "wrong lower address": ("lower_address", 3, {"rd_cpl_mismatch": 1}, FAILS),
    "wrong length": ("length", 2, {"rd_cpl_mismatch": 1, "rd_cpl_discarded": 1}, FAILS),
    "truncated completion": ("truncated", 3, {"rx_malformed": 1}, FAILS),
    "overlong completion": ("overlong", 2, {"rx_malformed": 1, "rd_cpl_discarded": 1}, FAILS),
    "dropped completion (timeout)": ("dropped", 3, {"rd_cpl_timeouts": 1}, FAILS),
    "dropped first half (byte count)": ("dropped", 2, {"rd_cpl_mismatch": 1}, FAILS),
    "unknown tag": ("unknown_tag", 2, {"rd_cpl_unexpected": 1}, not FAILS),
    "wrong requester ID": ("wrong_requester", 5, {"rd_cpl_unexpected": 1}, not FAILS),
    "locked completion": ("locked", 1, {"rd_cpl_unexpected": 1}, not FAILS),
    "header fragment": ("fragment", 6, {"rx_malformed": 1}, not FAILS),
    "unsolicited completions": ("unsolicited", None, {"rd_cpl_unexpected": 4}, not FAILS),
    "poisoned request": ("poisoned_write", None, {"rx_poisoned": 1}, not FAILS),
}


@pytest.fixture(scope="module")
def directed(pcie_model) -> dict[str, dict]:
    from busprobe.sim.pcie.runner import run_cocotb

    cases = [{"name": name, "kind": kind, "at": at}
             for name, (kind, at, _, _) in CASES.items()]
    results = run_cocotb(pcie_model, HERE, COCOTB_MODULE, "directed_faults", "all",
                         cases=cases)
    return {r["case"]: r for r in results}


@pytest.mark.sim
@pytest.mark.parametrize("name", list(CASES))
def test_each_fault_is_counted_fails_only_its_read_and_the_core_recovers(directed, name):
    kind, _, counts, fails = CASES[name]
    result = directed[name]
    assert result["counts"] == counts, result
    assert result["model"] == counts  # the fuzz's scoreboard agrees with the hand count
    assert result["failed"] == fails
    assert result["pattern_errors"] == 0  # nothing bad ever reached the checker
    # A failed read stops at the failure; a read that only saw strays got all its data.
    assert result["checked"] < READ if fails else result["checked"] == READ
    if kind == "poisoned_write":
        assert result["scratch"] == 0x600D
    assert result["clean_read"] == {"failed": False, "checked": READ, "pattern_errors": 0}
    assert result["clean_write_errors"] == 0
    assert result["counts_after_recovery"] == {}


def fuzz(pcie_model, name: str, **params) -> dict:
    from busprobe.sim.pcie.runner import run_cocotb

    (result,) = run_cocotb(pcie_model, HERE, COCOTB_MODULE, "fuzz_faults", name, **params)
    faults = sum(result["injected"].values())
    print(f"\nPCIe fault fuzz {name}: {result['rounds']} rounds ({result['reads']} reads, "
          f"{result['failed_reads']} failed, {result['writes']} writes), {faults} faults "
          f"injected among {result['completions']} completions: {result['injected']}; "
          f"counted {result['counts']}; {result['sim_seconds'] * 1e3:.2f} ms simulated in "
          f"{result['wall_seconds']:.1f} s ({result['sim_cycles_per_s']:.0f} cycles/s)")
    return result


@pytest.mark.sim
def test_bounded_fuzz_counts_every_fault_and_never_takes_bad_data(pcie_model):
    result = fuzz(pcie_model, "bounded", rounds=200, seed=13, fault_rate=0.06, stray_rate=0.06)
    assert sum(result["injected"].values()) >= 300
    assert result["failed_reads"] >= 50 and result["writes"] >= 25


@pytest.mark.sim
@pytest.mark.bench
def test_long_fuzz(pcie_model):
    result = fuzz(pcie_model, "long", rounds=2000, seed=2026, fault_rate=0.06, stray_rate=0.06,
                  check_every=100)
    assert sum(result["injected"].values()) >= 3000
