"""An in-process loopback device for the sweep engine's and the CLI's unit tests.

:class:`LoopbackTransport` is a Transport whose "device" keeps its own pattern source and checker
(real :class:`PatternStream` objects, restarted by ``set_pattern``), counts telemetry, and can
corrupt, drop or duplicate data or vanish on request, so the engine's error accounting and partial
saves are exercised for real. Its clock is simulated: throughput follows a fixed per-transfer
overhead model, so the figures a test expects are computable. The real device is tested by the
``sim`` test against the simulated gateware.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from busprobe import buses, targets
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.transport import (
    BusDescription,
    DeviceGone,
    RepeatFailed,
    Sink,
    Source,
    StreamResult,
    Telemetry,
    Transport,
)

#: What the loopback says it is: a USB 2.0 high-speed device.
LOOP_BUS = BusDescription(kind=buses.USB2_HS.kind, speed="high", max_packet_size=512)
#: Link rate and per-transfer cost of the loopback's timing model.
RATE = 40e6
OVERHEAD_S = 50e-6


def expected_throughput(length: int, queue_depth: int) -> float:
    """What the loopback's clock yields: the overhead is hidden by queueing beyond depth 1."""
    overhead = OVERHEAD_S / queue_depth
    return length / (length / RATE + overhead)


@dataclass
class Faults:
    """Faults to inject, keyed by the 0-based index of the ``stream`` call."""

    corrupt_in: set[int] = field(default_factory=set)  # flip a byte the host receives
    drop_in: set[int] = field(default_factory=set)  # deliver one byte less
    duplicate_in: set[int] = field(default_factory=set)  # deliver the first 4 bytes twice
    corrupt_out: set[int] = field(default_factory=set)  # flip a byte the device receives
    device_overcount: set[int] = field(default_factory=set)  # device counts 100 bytes extra
    lose_repeat: set[int] = field(default_factory=set)  # move half, then raise RepeatFailed
    gone_at: int | None = None  # raise DeviceGone on this call
    interrupt_at: int | None = None  # raise KeyboardInterrupt on this call
    chatter: bool = False  # write to file descriptor 1 in open() and stream(), as builds do


class LoopbackTransport(Transport):
    directions = ("in", "out")
    # Small amortisation volume: the loopback is exact, the tests should be quick.
    min_transfers = 2
    min_bytes = 16 << 10
    default_max_length = 8 << 10
    max_transfers = 64

    def __init__(self, selector: str = "sim:loop", faults: Faults | None = None) -> None:
        self.selector = selector
        self.faults = faults or Faults()
        self.clock = 0.0
        self.calls = 0
        self.opened = self.closed = False
        self.log: list[str] = []
        self._source = PatternStream()
        self._checker = PatternStream()
        self._telemetry = self._zero()

    @staticmethod
    def _zero() -> dict[str, int]:
        return {"in_bytes": 0, "out_bytes": 0, "pattern_errors": 0, "transfers": 0,
                "first_error_offset": -1}

    @property
    def bus(self) -> BusDescription:
        return LOOP_BUS

    def open(self) -> None:
        if self.faults.chatter:
            os.write(1, b"c++ -Os -c Vtop.cpp (a simulator build talking on stdout)\n")
        self.opened = True
        self.log.append("open")

    def close(self) -> None:
        self.closed = True
        self.log.append("close")

    def now(self) -> float:
        return self.clock

    def set_pattern(self, pattern: Pattern) -> None:
        self.log.append(f"set_pattern {pattern.name}")
        self._source = PatternStream(pattern)
        self._checker = PatternStream(pattern)

    def clear_telemetry(self) -> None:
        self.log.append("clear")
        self._telemetry = self._zero()

    def read_telemetry(self) -> Telemetry:
        self.log.append("read")
        t = self._telemetry
        seconds = {d: t[f"{d}_bytes"] / RATE for d in ("in", "out") if t[f"{d}_bytes"]}
        return Telemetry(raw=dict(t), device_seconds=seconds,
                         device_bytes={"in": t["in_bytes"], "out": t["out_bytes"]},
                         errors={"out": t["pattern_errors"]},
                         first_error_offset={"out": None if t["first_error_offset"] < 0
                                             else t["first_error_offset"]})

    def stream(self, direction: str, length: int, count: int, queue_depth: int,
               source: Source | None = None, sink: Sink | None = None) -> StreamResult:
        self.validate(direction, length, queue_depth)
        call, self.calls = self.calls, self.calls + 1
        self.log.append(f"stream {direction} {length}x{count} qd{queue_depth}")
        if self.faults.chatter:
            os.write(1, b"simulator noise\n")
        if call == self.faults.gone_at:
            raise DeviceGone(f"{self.selector}: the device is gone (unplugged)")
        if call == self.faults.interrupt_at:
            raise KeyboardInterrupt
        start = self.clock
        moved = 0
        if call in self.faults.lose_repeat:
            # Data moved, then the bus lost some: both ends' streams are somewhere unknown.
            (self._source.take if direction == "in" else self._checker.take)(length // 2)
            raise RepeatFailed(f"{self.selector}: a read lost data on the link "
                               "(1 completion timeout); the read path was reset")
        for index in range(count):
            if direction == "in":
                data = bytearray(self._source.take(length))
                if index == 0 and call in self.faults.corrupt_in:
                    data[length // 2] ^= 0x01
                if index == 0 and call in self.faults.drop_in:
                    data = data[:-1]
                if index == 0 and call in self.faults.duplicate_in:
                    data = data[:4] + data
                sink(bytes(data))
                self._telemetry["in_bytes"] += len(data)
            else:
                data = bytearray(source(length))
                if index == 0 and call in self.faults.corrupt_out:
                    data[0] ^= 0x80
                check = self._checker.check(data)
                self._telemetry["pattern_errors"] += check.errors
                if check.errors and self._telemetry["first_error_offset"] < 0:
                    self._telemetry["first_error_offset"] = check.first_error_offset
                self._telemetry["out_bytes"] += len(data)
            moved += len(data)
            self._telemetry["transfers"] += 1
            self.clock += length / RATE + OVERHEAD_S / queue_depth
        if call in self.faults.device_overcount:
            self._telemetry[f"{direction}_bytes"] += 100
        return StreamResult(direction, moved, count, start, self.clock)


@pytest.fixture
def loopback_device(monkeypatch: pytest.MonkeyPatch) -> tuple[Faults, list[LoopbackTransport]]:
    """Route ``sim:loop`` selectors to a :class:`LoopbackTransport` (described as a USB 2.0
    device); returns its ``(faults, instances)`` so a test sets faults first and inspects the
    transport after."""
    faults = Faults()
    instances: list[LoopbackTransport] = []
    real_describe, real_open = targets.describe, targets.open_transport

    def describe(text: str, **kwargs: object) -> targets.TargetDescription:
        if not text.startswith("sim:loop"):
            return real_describe(text, **kwargs)
        return targets.TargetDescription(text, "sim", "loop", {}, buses.USB2_HS, bus=LOOP_BUS,
                                         simulated=True)

    def open_transport(target: targets.TargetDescription | str) -> Transport:
        text = target if isinstance(target, str) else target.text
        if not text.startswith("sim:loop"):
            return real_open(target)
        transport = LoopbackTransport(text, faults)
        instances.append(transport)
        return transport

    monkeypatch.setattr(targets, "describe", describe)
    monkeypatch.setattr(targets, "open_transport", open_transport)
    return faults, instances


@pytest.fixture
def loopback_factory() -> tuple[type[LoopbackTransport], type[Faults]]:
    """``(LoopbackTransport, Faults)``."""
    return LoopbackTransport, Faults


@pytest.fixture
def loopback_throughput() -> Callable[[int, int], float]:
    """:func:`expected_throughput` (tests cannot import conftest under importlib mode)."""
    return expected_throughput
