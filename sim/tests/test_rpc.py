"""The simulator RPC's wire format and the watchdog's reading of /proc, without a simulator."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from busprobe.sim.rpc import PeerClosed, recv, send
from busprobe.sim.watchdog import ProcessWatch, describe_exit, read_state


def test_rpc_carries_objects_with_large_bulk_payloads_and_reports_a_closed_peer():
    left, right = socket.socketpair()
    message = ("stream", (0x02, 4096, 2, 1, [bytes(range(256)) * 4100] * 2))
    sender = threading.Thread(target=send, args=(left, message))  # larger than socket buffers
    sender.start()
    assert recv(right) == message
    sender.join()
    left.close()
    with pytest.raises(PeerClosed):
        recv(right)
    right.close()


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.01)"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_busy_process_is_fine_and_a_stopped_one_is_found_stuck():
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        spinning = ProcessWatch(busy.pid, stall_seconds=0.5)
        spinning.start()
        for _ in range(8):
            assert spinning.problem() is None
            time.sleep(0.1)
        os.kill(busy.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 3
        while (problem := spinning.problem()) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert problem is not None and problem.startswith("is stopped and made no progress")
    finally:
        busy.kill()
        busy.wait()


def test_a_dead_process_is_reported_as_exited_and_its_signal_named(sleeper):
    watch = ProcessWatch(sleeper.pid)
    assert read_state(sleeper.pid).alive
    sleeper.kill()
    sleeper.wait()
    assert watch.problem() == "exited"
    assert describe_exit(sleeper.returncode) == "killed by SIGKILL"
    assert describe_exit(3) == "exited with status 3"
