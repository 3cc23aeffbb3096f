"""``busprobe sim serve`` as a service: one guest at a time, the next after a disconnect, a
second guest turned away cleanly, until SIGTERM (exit 0, simulator stopped); and, end to end
with the simulated gateware, a well-behaved guest served after hostile ones."""

import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sim.export.serve import UsbredirService, listen
from busprobe.sim.export.tests.usbredir_peers import (
    DescriptorDevice,
    Drain,
    Guest,
    hostile_session,
    well_behaved_session,
)
from busprobe.sim.export.usbredir_wire import PacketType
from busprobe.transport import DeviceGone


def _turned_away(address) -> str:
    """Connect while another guest is served: the version text of the hello we get, then EOF."""
    with socket.create_connection(address, timeout=10) as sock:
        guest = Guest(sock, "second guest")
        hello = guest.receive()
        assert hello.kind == PacketType.HELLO
        with pytest.raises(EOFError):
            guest.receive()
        return guest.negotiated.peer_version


def test_one_guest_at_a_time_the_next_after_a_disconnect_a_second_one_turned_away():
    device = DescriptorDevice()
    stop = threading.Event()

    def check() -> None:
        if stop.is_set():
            raise DeviceGone("stopped")

    events: list[str] = []
    with listen("127.0.0.1:0") as listener:
        service = UsbredirService(device, listener, check_device=check, on_event=events.append)
        runner = threading.Thread(target=service.run, daemon=True)
        runner.start()
        address = listener.getsockname()
        for _ in range(2):  # served, left, served again
            with socket.create_connection(address, timeout=10) as sock:
                Guest(sock).until(PacketType.DEVICE_CONNECT)
                assert "busy, serving another guest" in _turned_away(address)
        with socket.create_connection(address, timeout=10) as sock:
            data = well_behaved_session(sock)
        assert PatternStream(Pattern.COUNTER).check(data).errors == 0
        stop.set()
        runner.join(10)
    # A reset after the guest that changed the device (its vendor requests and bulk data)
    # only: the two before it left it as the last reset had.
    assert (service.served, service.refused, device.resets) == (3, 2, 1)
    assert sum("refused usbredir guest" in e for e in events) == 2


def _children(pid: int) -> list[int]:
    """The process ids ``pid`` started (Linux /proc)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def _hostile_then_good(address, rng, messages: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    sent = 0
    while sent < messages:  # long sessions: each connection costs the simulation a bus reset
        with socket.create_connection(address, timeout=60) as sock:
            drain = Drain(sock)
            sent += hostile_session(sock, rng, min(200, messages - sent + 1), counts,
                                    gentle=True, endings=False)
            try:  # then a bulk packet claiming 4 GiB, which ends it
                sock.sendall(struct.pack("<IIQ", PacketType.BULK_PACKET, 0xFFFF_FFFF, 1))
            except OSError:
                pass
            drain.thread.join(60)
            assert not drain.thread.is_alive()
        counts["sessions"] = counts.get("sessions", 0) + 1
    counts["messages"] = sent
    return counts


@pytest.mark.sim
def test_the_command_serves_guests_in_turn_survives_hostile_ones_and_stops_on_sigterm():
    _serve_guests_and_hostile_ones(1000, seed=36)


@pytest.mark.sim
@pytest.mark.bench
def test_bench_ten_thousand_hostile_messages_to_the_simulated_gateware():
    _serve_guests_and_hostile_ones(10000, seed=37)


def _serve_guests_and_hostile_ones(messages: int, seed: int) -> None:
    """``busprobe sim serve`` on a free port: a guest, a second one turned away, ``messages``
    hostile messages, a well-behaved guest checking the gateware's pattern, then SIGTERM."""
    serve = subprocess.Popen([sys.executable, "-m", "busprobe", "sim", "serve", "--device",
                              "sim:usb2", "--usbredir", "0"], stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        # A first run builds the simulator first and says so; then the one ready line.
        while not (line := serve.stderr.readline()).startswith("busprobe: serving"):
            assert line, "busprobe sim serve ended before serving:\n" + "".join(lines)
            lines.append(line)
        assert line.startswith("busprobe: serving sim:usb2 ") and " on 127.0.0.1:" in line
        address = ("127.0.0.1", int(line.rsplit(":", 1)[1]))
        simulator = _children(serve.pid)
        assert simulator, "no simulator process"
        reader = threading.Thread(target=lambda: lines.extend(serve.stderr), daemon=True)
        reader.start()

        with socket.create_connection(address, timeout=60) as sock:
            Guest(sock).until(PacketType.DEVICE_CONNECT)
            assert "busy, serving another guest" in _turned_away(address)
        started = time.monotonic()
        counts = _hostile_then_good(address, random.Random(seed), messages)
        with socket.create_connection(address, timeout=120) as sock:
            data = well_behaved_session(sock)
        assert PatternStream(Pattern.COUNTER).check(data).errors == 0
        print(f"\nsimulated gateware: {counts['messages']} hostile messages over "
              f"{counts['sessions']} connections, then a good guest: "
              f"{time.monotonic() - started:.1f} s")

        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 0
        reader.join(10)
    finally:
        serve.kill()
        serve.wait()
    text = "".join(lines)
    assert "refused usbredir guest" in text and "dropped: protocol error" in text
    assert text.rstrip().endswith("stopped: terminated (SIGTERM); served "
                                  f"{2 + counts['sessions']} guests, simulator stopped"), text
    assert all(_gone(pid) for pid in simulator)
    assert "Traceback" not in text


def test_a_device_error_costs_the_guest_it_hit_not_the_service():
    from busprobe.transport import TransferTimeout

    class Flaky(DescriptorDevice):
        failures = 1

        def control(self, *args):
            if self.failures:
                self.failures -= 1
                raise TransferTimeout("the device did not answer")
            return super().control(*args)

    device, stop, events = Flaky(), threading.Event(), []

    def check() -> None:
        if stop.is_set():
            raise DeviceGone("stopped")

    with listen("127.0.0.1:0") as listener:
        service = UsbredirService(device, listener, check_device=check, on_event=events.append)
        runner = threading.Thread(target=service.run, daemon=True)
        runner.start()
        with socket.create_connection(listener.getsockname(), timeout=10) as sock:
            with pytest.raises((EOFError, ConnectionResetError)):  # closed, hello unread
                Guest(sock).receive()
        with socket.create_connection(listener.getsockname(), timeout=10) as sock:
            assert len(well_behaved_session(sock)) == 4096
        stop.set()
        runner.join(10)
    assert any("dropped: device error: the device did not answer" in e for e in events)
