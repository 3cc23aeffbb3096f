"""Long runs of ``sim:usb2`` (``make bench``): a 30-minute soak and a 1,000-point sweep, each with
0 errors and its peak memory flat from start to end (a leak is a defect).

* The soak runs the sweep engine in this process on one ``sim:usb2`` transport for
  ``BUSPROBE_SOAK_S`` seconds (1,800 unless set): a plan of IN and OUT at four lengths and
  queue depths 1 and 4, round after round. The peak resident memory (``VmHWM``) of this
  process and of the simulator is read after the first round and at the end.
* The 1,000-point sweep is one ``busprobe sweep`` command (``BUSPROBE_SWEEP_POINTS``, 1,000
  unless set: IN and OUT × lengths 1..N B × queue depths 1..10, small repeats), its JSON
  written and read back; the command's and the simulator's resident memory are sampled while
  it runs, the peak of the first tenth of the run against the peak of the last tenth.

"Flat": the end's peak at most :data:`GROWTH` above the start's (plus :data:`SLACK` for the
allocator's rounding); the sweep command also keeps every point's result until it writes the
JSON, up to :data:`KEPT_PER_POINT` each (about four times its JSON). The figures are printed
either way. A shortened run (e.g.
``BUSPROBE_SOAK_S=120 BUSPROBE_SWEEP_POINTS=50``) checks the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from busprobe.protocol.patterns import Pattern
from busprobe.sweep import Sweep, SweepPlan
from busprobe.targets import open_transport

pytestmark = [pytest.mark.bench, pytest.mark.sim]

#: How much the peak may grow from start to end, relative and absolute.
GROWTH = 0.05
SLACK = 8 << 20
#: What the sweep command keeps of each measured point until the end (its result: a point's
#: JSON is about 3.6 KiB).
KEPT_PER_POINT = 16 << 10


def _status(pid: int, key: str) -> int:
    """``VmRSS``/``VmHWM`` of ``pid`` in bytes (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) << 10
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:
            pass
    return out


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def _flat(start: int, end: int, kept: int = 0) -> bool:
    return end <= start * (1 + GROWTH) + SLACK + kept


def test_bench_a_30_minute_sim_usb2_soak_has_no_error_and_flat_memory(usb2_model):
    seconds = float(os.environ.get("BUSPROBE_SOAK_S", 1800))
    transport = open_transport("sim:usb2")
    transport.open()
    try:
        simulator = transport.platform.server.pid  # type: ignore[attr-defined]
        plan = SweepPlan(("in", "out"), (512, 4096, 65536, 262144), (1, 4), 3, ({},),
                         Pattern.PRBS31)
        started = time.monotonic()
        rounds = points = errors = moved = 0
        first: tuple[int, int] | None = None
        while rounds == 0 or time.monotonic() - started < seconds:
            results = Sweep(transport, plan).run()
            rounds += 1
            points += len(results)
            errors += sum(p.errors for p in results)
            moved += sum(p.bytes_per_repeat * len(p.samples) for p in results)
            if first is None:  # after the first round: the start's peaks
                first = (_status(os.getpid(), "VmHWM"), _status(simulator, "VmHWM"))
        end = (_status(os.getpid(), "VmHWM"), _status(simulator, "VmHWM"))
        wall = time.monotonic() - started
    finally:
        transport.close()
    print(f"\nsim:usb2 soak: {wall / 60:.1f} min, {rounds} rounds, {points} points, "
          f"{moved / 1e6:.1f} MB checked, {errors} errors; peak RSS host {_mib(first[0])} -> "
          f"{_mib(end[0])}, simulator {_mib(first[1])} -> {_mib(end[1])}")
    assert errors == 0
    assert _flat(first[0], end[0]) and _flat(first[1], end[1])


def _ladder(points: int) -> tuple[str, str]:
    """``--lengths`` and ``--queue-depth`` for about ``points`` points over IN and OUT."""
    depths = min(10, max(1, points // 20))
    lengths = max(1, points // (2 * depths))
    return ",".join(str(n) for n in range(1, lengths + 1)), \
        ",".join(str(q) for q in range(1, depths + 1))


def test_bench_a_1000_point_sim_usb2_sweep_has_no_error_and_flat_memory(usb2_model, tmp_path):
    wanted = int(os.environ.get("BUSPROBE_SWEEP_POINTS", 1000))
    lengths, depths = _ladder(wanted)
    result = tmp_path / "sweep.json"
    samples: list[tuple[float, int, int]] = []
    command = subprocess.Popen(
        [sys.executable, "-m", "busprobe", "sweep", "--device", "sim:usb2", "--direction",
         "in,out", "--lengths", lengths, "--queue-depth", depths, "--min-bytes", "1",
         "--no-progress", "--json", str(result)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(1.0):
            simulators = _children(command.pid)
            samples.append((time.monotonic(), _status(command.pid, "VmRSS"),
                            sum(_status(pid, "VmRSS") for pid in simulators)))

    sampler = threading.Thread(target=sample, daemon=True)
    started = time.monotonic()
    sampler.start()
    try:
        _, err = command.communicate(timeout=4 * 3600)
    finally:
        done.set()
        command.kill()
    wall = time.monotonic() - started
    assert command.returncode == 0, err
    doc = json.loads(result.read_text())
    running = [s for s in samples if s[2]]  # while the simulator runs
    tenth = max(1, len(running) // 10)
    start = (max(s[1] for s in running[:tenth]), max(s[2] for s in running[:tenth]))
    end = (max(s[1] for s in running[-tenth:]), max(s[2] for s in running[-tenth:]))
    print(f"\nsim:usb2 {len(doc['points'])}-point sweep: {wall / 60:.1f} min, "
          f"{doc['errors']} errors; peak RSS command {_mib(start[0])} -> {_mib(end[0])} "
          f"({(end[0] - start[0]) / len(doc['points']) / 1024:.1f} KiB a point), simulator "
          f"{_mib(start[1])} -> {_mib(end[1])} (first vs last tenth of the run)")
    assert doc["complete"] and doc["errors"] == 0
    assert len(doc["points"]) == 2 * len(lengths.split(",")) * len(depths.split(","))
    assert len(doc["points"]) >= min(wanted, 1000) * 0.9
    assert _flat(start[0], end[0], kept=len(doc["points"]) * KEPT_PER_POINT)
    assert _flat(start[1], end[1])
