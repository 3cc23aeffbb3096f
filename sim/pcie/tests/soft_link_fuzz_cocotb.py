"""cocotb test: the soft endpoint (Verilator) on a hostile link at the symbol level, against a
root port that replays (bench: :mod:`busprobe.sim.pcie.symbol.hostile_bench`; requests:
:mod:`busprobe.sim.pcie.symbol.request_mix`).

``BUSPROBE_FUZZ_SEED`` and ``BUSPROBE_FUZZ_FAULTS`` (the faults to inject, at least) say how
long; figures go to ``$BUSPROBE_SOFT_LINK_FUZZ_FIGURES`` (JSON lines).
"""

from __future__ import annotations

import json
import os
import time

import cocotb
from busprobe.protocol.pcie_ltssm import LtssmState, unpack_link_status
from busprobe.sim.pcie.symbol.hostile_bench import HostileLinkBench
from busprobe.sim.pcie.symbol.request_mix import RequestMix

#: The endpoint's counters the figures report (outputs of the model).
COUNTERS = ("naks", "replays", "replay_timeouts", "duplicates", "recoveries", "protocol_errors",
            "dropped", "malformed", "unsupported_requests", "unexpected_completions",
            "overflows")
#: Symbol times per fault the run may take before it counts as stuck (the faults come at about
#: one in 140 symbol times; replays and Recoveries take their share).
SYMBOLS_PER_FAULT = 600
#: A request unanswered this long (symbol times) is lost: REPLAY_NUM rollovers and Recoveries
#: take a few thousand.
ANSWER_WITHIN = 30_000
#: Symbol times to let the last replays, ACKs and Recoveries finish once faults stop.
DRAIN = 20_000


def describe(bench: HostileLinkBench, mix: RequestMix, what: str) -> str:
    """What went wrong and the state of both ends, in full (one line)."""
    dll = bench.dll
    outputs = {name: bench.output(name) for name in COUNTERS + (
        "acked_seq", "next_transmit_seq", "next_rcv_seq", "dl_active")}
    return (f"{what} after {bench.cycles} symbol times; injected {bench.injected()}; "
            f"endpoint {outputs}, state {unpack_link_status(bench.output('status')).state!r}; "
            f"root port next_transmit_seq {dll.next_transmit_seq}, unacknowledged "
            f"{dll.unacknowledged}, acks {dll.acks[-4:]}, naks {dll.naks[-4:]}, replays "
            f"{dll.replays}, partner {bench.partner.history[-6:]}, credits {dll.credits}")


@cocotb.test(timeout_time=2, timeout_unit="sec")
async def seeded_faults_both_ways_lose_repeat_or_corrupt_no_request_answer_or_write(dut):
    seed = int(os.environ.get("BUSPROBE_FUZZ_SEED", "1"))
    target = int(os.environ.get("BUSPROBE_FUZZ_FAULTS", "1000"))
    started = time.monotonic()
    bench = await HostileLinkBench.start(dut, seed=seed)
    await bench.until_dl_active()
    dll = bench.dll
    mix = RequestMix(dll, seed=seed)
    mix.configure()
    while mix.outstanding:
        await bench.run(32)
        mix.check_answers(dll.tlps)
    assert bench.output("memory_space") == 1

    bench.faults.enabled = True
    limit = bench.cycles + SYMBOLS_PER_FAULT * target
    while sum(bench.injected().values()) < target:
        assert bench.cycles < limit, (bench.cycles, bench.injected(), bench.partner.state)
        mix.issue(writes_in_flight=len(mix.writes) - len(bench.app_tlps))
        await bench.run(16)
        mix.check_answers(dll.tlps)
        mix.now = bench.cycles
        oldest = mix.oldest()
        if oldest is not None and oldest[0] >= ANSWER_WITHIN:
            raise AssertionError(describe(bench, mix, f"unanswered: {oldest}"))
    bench.faults.enabled = False
    bench.clear_pending()
    faulted = bench.cycles

    end = bench.cycles + DRAIN
    while bench.cycles < end and (mix.outstanding or dll.unacknowledged
                                  or bench.output("acked_seq") + 1
                                  != bench.output("next_transmit_seq")):
        await bench.run(32)
        mix.check_answers(dll.tlps)
    await bench.run(200)
    mix.check_answers(dll.tlps)

    counters = {name: bench.output(name) for name in COUNTERS}
    state = unpack_link_status(bench.output("status")).state
    figures = {
        "seed": seed, "faults": sum(bench.injected().values()), "injected": bench.injected(),
        "symbols": bench.cycles, "faulted_symbols": faulted, "completed": mix.completed,
        "writes": len(mix.writes), "endpoint": counters,
        "root_port": {"naks_sent": dll.naks_sent, "naks_received": len(dll.naks),
                      "replays": dll.replays, "replay_timeouts": dll.replay_timeouts,
                      "duplicates_dropped": dll.duplicates, "tlps_kept": len(dll.tlps),
                      "tlps_sent": dll.next_transmit_seq},
        "wall_seconds": round(time.monotonic() - started, 2),
    }
    path = os.environ.get("BUSPROBE_SOFT_LINK_FUZZ_FIGURES")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(figures) + "\n")

    assert mix.outstanding == 0 and dll.unacknowledged == 0, figures
    assert bench.app_tlps == mix.writes, "the writes reached the application altered"
    assert state == LtssmState.L0, (state, figures)
    for name in ("protocol_errors", "dropped", "malformed", "unexpected_completions",
                 "overflows"):
        assert counters[name] == 0, (name, figures)
    # Each side saw its TLPs damaged and repaired them.
    assert counters["naks"] and counters["replays"] and dll.naks_sent and dll.replays, figures
    assert counters["duplicates"] >= dll.duplicates_sent > 0, figures
    assert figures["faults"] >= target, figures
