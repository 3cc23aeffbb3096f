"""A simulator that dies, stops or is interrupted never hangs a sweep, on either bus.

The simulators here are the real ones (Verilator models of the gateware behind their bus
models); they are killed, stopped and interrupted with real signals.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from busprobe.cli import main
from busprobe.sim.simulator import SimServer
from busprobe.sweep import Sweep
from busprobe.targets import open_transport
from busprobe.transport import DeviceGone

SWEEPS = {  # selector -> one small point per direction the bus streams first
    "sim:usb2": ["--direction", "in", "--lengths", "4K,8K"],
    "sim:pcie": ["--direction", "write", "--lengths", "4K,8K"],
}


def server_of(transport) -> SimServer:
    return transport.platform.server if hasattr(transport, "platform") else transport.server


@pytest.fixture
def servers(monkeypatch):
    """Every SimServer started while the test runs, in order."""
    made: list[SimServer] = []
    init = SimServer.__init__

    def record(self, *args, **kwargs):
        made.append(self)
        init(self, *args, **kwargs)

    monkeypatch.setattr(SimServer, "__init__", record)
    return made


@pytest.mark.sim
@pytest.mark.parametrize(("signum", "message", "bound"), [
    (signal.SIGKILL, "simulator killed by SIGKILL", 5),  # noticed at once: the socket closes
    (signal.SIGSTOP, "simulator is stopped and made no progress", 8),  # no CPU for 4 s
], ids=["killed", "stopped"])
@pytest.mark.parametrize("selector", sorted(SWEEPS))
def test_a_dead_or_stopped_simulator_is_one_line_device_gone_and_is_not_left_behind(
        selector, signum, message, bound):
    with open_transport(selector) as transport:
        server = server_of(transport)
        os.kill(server.pid, signum)
        started = time.monotonic()
        with pytest.raises(DeviceGone, match=message) as info:
            transport.read_telemetry()
        assert time.monotonic() - started < bound
        assert "\n" not in str(info.value) and "GPI" not in str(info.value)
    assert server.proc.poll() is not None and not _alive({server.pid}, wait=2)


@pytest.mark.sim
@pytest.mark.parametrize("selector", sorted(SWEEPS))
def test_killing_the_simulator_mid_sweep_ends_in_one_line_within_5_s_and_saves_the_points(
        selector, servers, monkeypatch, tmp_path, capsys):
    measure, killed = Sweep.measure, []

    def measure_then_kill(self, spec):
        point = measure(self, spec)
        if not killed:  # after the first point, the simulator child dies
            os.kill(servers[-1].pid, signal.SIGKILL)
            killed.append(time.monotonic())
        return point

    monkeypatch.setattr(Sweep, "measure", measure_then_kill)
    out = tmp_path / "partial.json"
    status = main(["sweep", "--device", selector, *SWEEPS[selector], "--queue-depth", "2",
                   "--json", str(out), "--no-progress"])
    elapsed = time.monotonic() - killed[0]
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and elapsed < 5
    assert "killed by SIGKILL" in err[-1], err
    doc = json.loads(out.read_text())
    assert doc["complete"] is False and "DeviceGone" in doc["error"]
    assert len(doc["points"]) == 1 and doc["points"][0]["errors"] == 0


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat[stat.rindex(")") + 2:].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pids: set[int], wait: float = 0) -> set[int]:
    """Those of ``pids`` still running (zombies are dead) after up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        alive = set()
        for pid in pids:
            try:
                state = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            if state[state.rindex(")") + 2] != "Z":
                alive.add(pid)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


@pytest.mark.sim
@pytest.mark.parametrize("signals", [
    [signal.SIGINT], [signal.SIGINT, signal.SIGINT], [signal.SIGTERM], [signal.SIGHUP],
], ids=["ctrl-c", "ctrl-c-twice", "sigterm", "sighup"])
def test_a_signal_while_the_simulator_is_busy_ends_the_sweep_at_once_and_leaves_nothing(
        tmp_path, signals):
    sweep = subprocess.Popen(
        [sys.executable, "-m", "busprobe", "sweep", "--device", "sim:usb2", "--direction", "in",
         "--lengths", "256K", "--json", str(tmp_path / "r.json"), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = sweep.stderr.readline()  # printed once the simulator is up, before measuring
    assert line.startswith("sweeping sim:usb2"), line
    time.sleep(1.0)  # well inside the first 3 x 256 KiB repeat
    family = _descendants(sweep.pid)
    assert family, "the simulator should be running"
    started = time.monotonic()
    for signum in signals:
        sweep.send_signal(signum)
        time.sleep(0.05)
    status = sweep.wait(timeout=30)
    elapsed = time.monotonic() - started
    assert status == 128 + signals[0] and elapsed < 5
    # Stopped inside the first point: nothing was measured, yet what is known is written.
    assert "no point was finished" in sweep.stdout.read()
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["complete"] is False and doc["points"] == [] and doc["error"]
    assert not _alive(family, wait=2)


#: When the simulator is stopped, as the sweep sees it: (what the sweep is about to do when it
#: stops the simulator, the points finished by then).
STOP_MOMENTS = {
    "before-any-point": ("measure", 0),  # the first point's first request never answers
    "inside-the-first-point": ("stream", 0),  # after the first point's first repeat
    "after-the-first-point": ("measure-done", 1),
}


@pytest.mark.sim
@pytest.mark.parametrize("moment", sorted(STOP_MOMENTS))
def test_a_sweep_whose_simulator_is_stopped_ends_in_seconds_and_always_leaves_its_document(
        moment, servers, monkeypatch, tmp_path, capsys):
    """Issue 47, item 7: ``kill -STOP`` on the simulator at any moment of the run ends it with
    exit 2 and one line within seconds, and FILE holds the error, the target, the plan and the
    points finished (possibly none), with ``complete: false``, every time."""
    hook, finished = STOP_MOMENTS[moment]
    stopped: list[float] = []

    def stop() -> None:
        if not stopped:
            os.kill(servers[-1].pid, signal.SIGSTOP)
            stopped.append(time.monotonic())

    measure = Sweep.measure
    if hook == "measure":
        def measure_stopped(self, spec):
            stop()
            return measure(self, spec)
    elif hook == "measure-done":
        def measure_stopped(self, spec):
            point = measure(self, spec)
            stop()
            return point
    else:  # the transport's stream: the first repeat returns, then the simulator stops
        def measure_stopped(self, spec):
            stream = self.transport.stream

            def stream_then_stop(*args, **kwargs):
                result = stream(*args, **kwargs)
                stop()
                return result

            monkeypatch.setattr(self.transport, "stream", stream_then_stop)
            return measure(self, spec)
    monkeypatch.setattr(Sweep, "measure", measure_stopped)
    out = tmp_path / "r.json"
    out.write_text('{"an earlier": "result"}')
    status = main(["sweep", "--device", "sim:usb2", "--direction", "in", "--lengths", "4K,8K",
                   "--queue-depth", "1", "--min-bytes", "16K", "--json", str(out),
                   "--no-progress"])
    elapsed = time.monotonic() - stopped[0]
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and elapsed < 10, (status, elapsed)
    assert err[-1].startswith("busprobe: error: sim:usb2: simulator is stopped"), err
    doc = json.loads(out.read_text())
    assert doc["complete"] is False and doc["error"].startswith("DeviceGone: ")
    assert doc["device"] == "sim:usb2" and doc["bus"]["kind"] == "usb2-hs"
    assert doc["plan"]["lengths"] == [4096, 8192] and len(doc["points"]) == finished
    assert not _alive({servers[-1].pid}, wait=2)


@pytest.mark.sim
def test_a_sweep_process_whose_simulator_is_stopped_at_once_leaves_its_document(tmp_path):
    """The same through a real ``busprobe`` process, its simulator stopped with ``kill -STOP``
    as soon as the sweep says it measures: no point has finished."""
    out = tmp_path / "r.json"
    sweep = subprocess.Popen(
        [sys.executable, "-m", "busprobe", "sweep", "--device", "sim:usb2", "--direction", "in",
         "--lengths", "256K", "--json", str(out), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = sweep.stderr.readline()
    assert line.startswith("sweeping sim:usb2"), line
    simulator = max(_descendants(sweep.pid))  # the launcher's child: the simulator itself
    os.kill(simulator, signal.SIGSTOP)
    started = time.monotonic()
    status = sweep.wait(timeout=60)
    elapsed = time.monotonic() - started
    err = sweep.stderr.read().strip().splitlines()
    assert status == 2 and elapsed < 10 and len(err) == 1, (status, elapsed, err)
    assert "simulator is stopped" in err[0]
    doc = json.loads(out.read_text())
    assert doc["complete"] is False and doc["points"] == [] and doc["plan"]["lengths"] == [262144]
    assert not _alive({simulator}, wait=2)
