"""cocotb tests of the PCIe core behind a hostile root complex (run by test_pcie_faults.py).

``directed_faults`` runs the cases listed in ``BUSPROBE_PCIE_CASE["cases"]`` one after the other
on one core, so every case also shows the core recovering from the one before: a case is one
read (or an idle moment) with one planned fault, the counters it moved, the failure flag, the
bytes the checker took, then the host's recovery (read reset if the read failed) and a clean
read and write. The pytest side holds the expected counts, written by hand.

``fuzz_faults`` runs seeded rounds of reads and writes with random faults and strays, checks
every round (no pattern error ever, the failure flag exactly when a read lost data, all the
data when none did) and compares the core's counters with the guard model's.
"""

from __future__ import annotations

import time

import cocotb
from busprobe.protocol import pcie as proto
from busprobe.sim.pcie.faults import FATAL, STRAY
from busprobe.sim.pcie.hostile import COUNTERS, HostileBench
from cocotbext.pcie.core.tlp import Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId
from pcie_core_cocotb import case, report, started

#: 4 reads of 512 bytes (MRRS 512), each answered in 2 completions of 256 (MPS 256).
READ = 2048


def delta(after: dict, before: dict) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in COUNTERS
            if after.get(k, 0) != before.get(k, 0)}


async def idle_case(bench: HostileBench, kind: str) -> None:
    """Faults that come while no read runs."""
    tb = bench.tb
    if kind == "unsolicited":
        for tag in (0, 3, 7, 200):  # the core's tags, none in flight, and one it never uses
            tb.ep.inject(*bench.injector.deliver([bench.injector.unsolicited(tag)]))
    elif kind == "poisoned_write":
        # A poisoned write to BAR0's scratch register must not write it.
        write = Tlp()
        write.fmt_type = TlpType.MEM_WRITE
        write.requester_id = PcieId(0, 0, 0)
        write.address = tb.function.bar[0] + proto.csr("ctrl_scratch")
        write.first_be = 0xF
        write.set_data((0x0BAD_F00D).to_bytes(4, "little"))
        write.ep = True
        await tb.write32(proto.csr("ctrl_scratch"), 0x600D)
        # Injected TLPs skip the link: read back first so the root's write is in place before
        # the poisoned one arrives (else it would overwrite it and prove nothing).
        assert await tb.read32(proto.csr("ctrl_scratch")) == 0x600D
        tb.ep.inject(*bench.injector.deliver([write]))
    else:
        raise ValueError(f"no idle case {kind!r}")
    await bench.settle()


@cocotb.test(timeout_time=20_000, timeout_unit="us")
async def directed_faults(dut):
    """One planned fault per case, each followed by the host's recovery and clean traffic."""
    params = case()
    tb, regs = await started(dut, params)
    bench = HostileBench(tb, regs, seed=params.get("seed", 1))
    for spec in params["cases"]:
        kind = spec["kind"]
        before, model_before = await bench.counters(), dict(bench.model.counts)
        if kind in FATAL or kind in STRAY:
            bench.injector.plan(kind, bench.injector.completions + spec["at"])
            outcome = await bench.read(READ)
        else:
            await idle_case(bench, kind)
            outcome = await bench.read(READ)
        counts = delta(await bench.counters(), before)
        result = {"case": spec["name"], "counts": counts,
                  "model": delta(dict(bench.model.counts), model_before),
                  "failed": outcome.failed, "checked": outcome.checked,
                  "pattern_errors": outcome.pattern_errors}
        if kind == "poisoned_write":
            result["scratch"] = await tb.read32(proto.csr("ctrl_scratch"))
        if outcome.failed:
            await bench.recover()
        after_fault = await bench.counters()
        clean = await bench.read(READ)
        result.update(clean_read={"failed": clean.failed, "checked": clean.checked,
                                  "pattern_errors": clean.pattern_errors},
                      clean_write_errors=await bench.write(READ),
                      counts_after_recovery=delta(await bench.counters(), after_fault))
        report(dut, **result)


@cocotb.test(timeout_time=2_000_000, timeout_unit="us")
async def fuzz_faults(dut):
    """Seeded rounds of reads (random faults and strays among the real completions) and writes
    (strays arriving meanwhile); the core must never take bad data and must count it all."""
    params = case()
    rounds, check_every = params["rounds"], params.get("check_every", 25)
    tb, regs = await started(dut, params)
    bench = HostileBench(tb, regs, seed=params["seed"], fault_rate=params["fault_rate"],
                         stray_rate=params["stray_rate"])
    rng, model = bench.injector.rng, bench.model
    await regs.clear_telemetry()
    wall, start = time.perf_counter(), tb.now()
    failed_reads = reads = writes = 0
    for index in range(rounds):
        if params.get("log_rounds"):
            dut._log.info("round %d, model %s, injected %s", index, dict(model.counts),
                          dict(bench.injector.injected))
        if rng.random() < 0.75:
            length = rng.choice((512, 1024, 2048, 4096, 8192))
            outcome = await bench.read(length)
            reads += 1
            where = f"round {index}: read of {length}: {outcome}, model {dict(model.counts)}"
            assert outcome.pattern_errors == 0, where
            assert outcome.failed == (model.failures > 0), where
            if outcome.failed:
                failed_reads += 1
                await bench.recover()
            else:
                assert outcome.checked == length, where
        else:
            errors = await bench.write(rng.choice((1024, 4096, 8192)), strays=rng.randint(1, 4))
            writes += 1
            assert errors == 0, f"round {index}: {errors} bad words written"
        if (index + 1) % check_every == 0:
            counts = await bench.counters()
            assert counts == dict(model.counts), f"after round {index}: {counts} != model"
    # After it all, the read path reset once more and clean traffic both ways.
    bench.injector.fault_rate = bench.injector.stray_rate = 0.0
    await bench.recover()
    clean = await bench.read(8192)
    assert (clean.failed, clean.checked, clean.pattern_errors) == (False, 8192, 0), clean
    assert await bench.write(8192) == 0
    counts = await bench.counters()
    assert counts == dict(model.counts), f"{counts} != model {dict(model.counts)}"
    wall = time.perf_counter() - wall
    sim_s = tb.now() - start
    report(dut, test="fuzz_faults", rounds=rounds, reads=reads, writes=writes,
           failed_reads=failed_reads, injected=dict(bench.injector.injected), counts=counts,
           completions=bench.injector.completions, requests=bench.injector.requests,
           sim_seconds=sim_s, wall_seconds=wall,
           sim_cycles_per_s=sim_s * proto.CLOCK_HZ / wall)
