"""How a sweep point's transfers go on the busprobe USB device: one object per framing.

:class:`~.transport.UsbDeviceTransport` picks one of these when it opens (and when the sweep
sets a protocol), from the device's GET_INFO and the selected protocol
(:func:`choose_framing`); after that it hands every point to it and asks nothing more about the
device. Each framing knows its own rules and only those:

* :class:`StockStream` — the stock LUNA design (no vendor requests): bare queued bulk streams,
  COUNTER only, no telemetry, IN lengths whole packets.
* :class:`PatternStream` — busprobe's stream device (USB 2.0 or SuperSpeed): queued streams and
  loopback, the device's pattern and telemetry.
* :class:`FramerBot` — usb2-full's BOT framer: CBW, data, CSW per transfer, one at a time.
* :class:`DiskBot`, :class:`DiskUas` — the null disk over BOT (alternate 0) or UAS (alternate 1):
  READ(10)/WRITE(10) checked against the LBA pattern (:class:`~.disk.DiskFraming`).
* :class:`DiskRefused` — streams asked of the null disk: refused in one line.

A point's ``length`` goes into the framing once, which builds the plan and runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ...protocol import uas, usb2
from ...protocol.names import Direction, Framing
from ...protocol.patterns import Pattern
from ...protocol.streams import MAX_STREAMS
from ...transport import InvalidRequest, Sink, Source, StreamResult, Telemetry, TransportError
from .bot import BotRun, wrapper_bytes
from .disk import ALTERNATES, DiskRun
from .plans import QueuedStream, loopback, loopback_result
from .uas import UasRun

if TYPE_CHECKING:
    from .transport import UsbDeviceTransport

__all__ = ["UsbFraming", "StockStream", "PatternStream", "FramerBot", "DiskBot", "DiskUas",
           "DiskRefused", "choose_framing", "SET_INTERFACE"]

#: bRequest of the standard SET_INTERFACE request (USB 2.0 §9.4.10).
SET_INTERFACE = 11


@dataclass
class UsbFraming:
    """One framing of a USB device's sweep points (the base: rules every framing shares).

    Attributes
    ----------
    device : UsbDeviceTransport
        The transport whose platform, vendor requests and command numbering it uses.
    name : Framing
        The protocol it is (:attr:`busprobe.transport.BusDescription.protocol`).
    loopback_refusal : str or None
        Why this device refuses loopback (a SuperSpeed design without the data mode), said
        before the generic "not one of" message; None where it has loopback.
    """

    device: UsbDeviceTransport
    name: Framing
    loopback_refusal: str | None = None
    #: The transport makes and checks the data itself (:attr:`Transport.checks_own_data`).
    checks_own_data = False

    # -- rules ------------------------------------------------------------------------------
    def refuse(self) -> None:
        """Refuse every point (the null disk asked for streams); default: nothing."""

    def refuse_loopback(self, direction: Direction) -> None:
        """Refuse loopback where this framing has none (BOT and UAS frame one direction)."""
        if direction == Direction.LOOPBACK and self.name != Framing.STREAM:
            name = self.name.upper()
            raise InvalidRequest(f"{name} frames in and out transfers; loopback streams both "
                                 f"directions at once and has no {name} form")

    def check_length(self, direction: Direction, length: int) -> None:
        """Refuse a length this framing cannot carry; default: any."""

    def check_depth(self, queue_depth: int) -> None:
        """Refuse a queue depth this framing cannot keep; default: any."""

    def check_packets(self, direction: Direction, length: int) -> None:
        """Refuse a length the device cannot end where the host's transfer ends; default: any
        (the device's SET_IN_TRANSFER ends it)."""

    def validate(self, direction: Direction, length: int, queue_depth: int) -> None:
        """Every rule of a point, in the order the one-line refusals name them."""
        self.refuse()
        if direction == Direction.LOOPBACK and self.loopback_refusal:
            raise InvalidRequest(self.loopback_refusal)
        self.device.validate_generic(direction, length, queue_depth)
        self.refuse_loopback(direction)
        self.check_length(direction, length)
        if length >= usb2.IN_ZLP_FLAG:
            raise InvalidRequest(f"USB transfer length {length} does not fit SET_IN_TRANSFER "
                                 f"(at most {usb2.IN_ZLP_FLAG - 1} bytes)")
        self.check_depth(queue_depth)
        self.check_packets(direction, length)

    # -- the device ---------------------------------------------------------------------------
    def apply(self) -> None:
        """Put the device in this framing, whatever it was in (sent every time)."""

    def set_pattern(self, pattern: Pattern) -> None:
        self.device.requests.set_pattern(pattern)

    def clear_telemetry(self) -> None:
        self.device.requests.clear_telemetry()

    def read_telemetry(self) -> Telemetry:
        return self.device.requests.read_telemetry()

    def stream(self, direction: Direction, length: int, count: int, queue_depth: int,
               source: Source | None, sink: Sink | None) -> StreamResult:
        raise NotImplementedError

    def _outgoing(self, direction: Direction, length: int, count: int,
                  source: Source | None) -> list[bytes] | None:
        """OUT and loopback: each transfer's data, made before the run."""
        if direction not in (Direction.OUT, Direction.LOOPBACK):
            return None
        if source is None:
            article = "an OUT" if direction == Direction.OUT else "a loopback"
            raise InvalidRequest(f"{article} stream needs a data source")
        return [source(length) for _ in range(count)]

    def _queued(self, direction: Direction, length: int, count: int, queue_depth: int,
                outgoing: list[bytes] | None, sink: Sink | None) -> StreamResult:
        endpoint = usb2.EP_IN if direction == Direction.IN else usb2.EP_OUT
        selector = self.device.selector
        plan = QueuedStream(endpoint, length, count, queue_depth, outgoing=outgoing,
                            what=f"{selector}: {direction} transfer")
        start, end = self.device.run(plan, length, f"{direction} transfer")
        plan.deliver(sink)
        return plan.result(start, end)

    def _recover(self) -> None:
        """Reset recovery after a failed command, as a mass-storage driver does: the framing
        applied again (a device already gone keeps the first error)."""
        try:
            self.apply()
        except TransportError:
            pass


class StockStream(UsbFraming):
    """The stock LUNA design: COUNTER from power-up, no vendor requests, no telemetry."""

    def check_packets(self, direction: Direction, length: int) -> None:
        packet = self.device.requests.max_packet_size
        if direction == Direction.IN and length % packet:
            raise InvalidRequest(f"{self.device.selector}: the stock design ends no IN transfer "
                                 f"with a short packet; use lengths that are multiples of "
                                 f"{packet}")

    def set_pattern(self, pattern: Pattern) -> None:
        if pattern != Pattern.COUNTER:
            raise InvalidRequest(f"{self.device.selector}: the stock design only streams COUNTER")

    def clear_telemetry(self) -> None:
        pass

    def read_telemetry(self) -> Telemetry:
        return Telemetry()

    def stream(self, direction: Direction, length: int, count: int, queue_depth: int,
               source: Source | None, sink: Sink | None) -> StreamResult:
        outgoing = self._outgoing(direction, length, count, source)
        return self._queued(direction, length, count, queue_depth, outgoing, sink)


class PatternStream(UsbFraming):
    """busprobe's stream device: queued streams in the PATTERN data mode, loopback in its own."""

    def apply(self) -> None:
        self.device.set_mode(usb2.DataMode.PATTERN, again=True)

    def read_telemetry(self) -> Telemetry:
        counters = super().read_telemetry()
        if self.device.mode != usb2.DataMode.LOOPBACK:
            return counters
        # Timed by the slower direction's window: in each microframe one direction gets 7 of
        # the 13 transactions and the other 6, alternately, so a window of an odd number of
        # microframes shows one direction above the 6.5 packets both average; the other, over
        # nearly the same microframes, then shows less. What the device received was checked
        # on OUT. Both byte counts must equal what the host asked.
        rates = {key: counters.device_throughput(key) for key in (Direction.IN, Direction.OUT)}
        if None not in rates.values():
            slower = min(rates, key=lambda key: rates[key])
            counters.device_seconds[Direction.LOOPBACK] = counters.device_seconds[slower]
            counters.window_bytes[Direction.LOOPBACK] = counters.window_bytes.get(
                slower, counters.device_bytes[slower])
        for table in (counters.errors, counters.first_error_offset):
            if Direction.OUT in table:
                table[Direction.LOOPBACK] = table[Direction.OUT]
        counters.device_bytes[Direction.LOOPBACK] = min(counters.device_bytes[Direction.IN],
                                                        counters.device_bytes[Direction.OUT])
        return counters

    def stream(self, direction: Direction, length: int, count: int, queue_depth: int,
               source: Source | None, sink: Sink | None) -> StreamResult:
        outgoing = self._outgoing(direction, length, count, source)
        device = self.device
        if direction == Direction.LOOPBACK:
            device.set_mode(usb2.DataMode.LOOPBACK)
            pair = loopback(length, count, queue_depth, outgoing or [],
                            what=f"{device.selector}: loopback")
            start, end = device.run(pair, length, "loopback transfer")
            pair.plans[1].deliver(sink)
            return loopback_result(pair, start, end)
        device.set_mode(usb2.DataMode.PATTERN)
        if direction == Direction.IN:
            # The device ends each IN transfer where the host's transfer ends, so a short
            # length completes with a short packet instead of waiting for more data.
            device.requests.set_in_transfer(length)
        return self._queued(direction, length, count, queue_depth, outgoing, sink)


class _CommandFraming(UsbFraming):
    """BOT or UAS: every transfer a SCSI-style command whose wrappers the device counts and
    times with the data, so the host's window is the only timing (the CSW or SENSE IU closes
    each command anyway)."""

    def read_telemetry(self) -> Telemetry:
        counters = super().read_telemetry()
        if self.name == Framing.BOT:  # UAS's IUs go on pipes of their own
            for direction, extra in wrapper_bytes(self.device.commands.since_clear).items():
                if direction in counters.device_bytes:
                    counters.device_bytes[direction] -= extra
        counters.device_seconds.clear()
        counters.window_bytes.clear()
        return counters


class _OneAtATime(_CommandFraming):
    def check_depth(self, queue_depth: int) -> None:
        if queue_depth != 1:
            raise InvalidRequest(f"BOT runs one command at a time: queue depth must be 1, "
                                 f"not {queue_depth}")


class FramerBot(_OneAtATime):
    """usb2-full's BOT framer: ``count`` commands of ``length`` bytes, CBW -> data -> CSW."""

    def apply(self) -> None:
        self.device.set_mode(usb2.DataMode.BOT, again=True)

    def stream(self, direction: Direction, length: int, count: int, queue_depth: int,
               source: Source | None, sink: Sink | None) -> StreamResult:
        outgoing = self._outgoing(direction, length, count, source)
        device = self.device
        cbws = device.commands.cbws(direction, length, count)
        what = f"BOT {direction} command"
        run = BotRun([c.pack() for c in cbws], direction, length, outgoing,
                     what=f"{device.selector}: {what}")
        start, end = device.run(run, length, what)
        run.deliver(sink)
        try:
            device.commands.check(cbws, run.csws)
        except TransportError:
            # The framer waits for a CBW again and nothing stale stays buffered.
            self._recover()
            raise
        return run.result(start, end)


class _Disk(_CommandFraming):
    """The null disk: its data are the LBA pattern, made and checked here; its framing is an
    alternate setting (SET_INTERFACE restarts its engines and flushes its endpoints: a reset
    recovery too)."""

    checks_own_data = True

    def apply(self) -> None:
        self.device.platform.control(0x01, SET_INTERFACE, ALTERNATES[self.name], 0, b"")

    def check_length(self, direction: Direction, length: int) -> None:
        self.device.disk_framing.validate(length)

    def _plan(self, direction: Direction, length: int, count: int,
              queue_depth: int) -> DiskRun:
        raise NotImplementedError

    @staticmethod
    def _result(plan: Any, direction: Direction, start: float, end: float) -> StreamResult:
        raise NotImplementedError

    def stream(self, direction: Direction, length: int, count: int, queue_depth: int,
               source: Source | None, sink: Sink | None) -> StreamResult:
        """``count`` READ(10) or WRITE(10) commands of ``length`` bytes; IN data checked
        against the LBA pattern, OUT data made from it (the disk counts a write's mismatches:
        the telemetry's device errors)."""
        framing = self.device.disk_framing
        run = self._plan(direction, length, count, queue_depth)
        what = f"{self.name.upper()} {direction} command"
        start, end = self.device.run(run.plan, length, what)
        try:
            mismatched, first = framing.check(run)
        except TransportError:
            self._recover()
            raise
        return replace(self._result(run.plan, direction, start, end),
                       mismatched_words=mismatched, first_error_offset=first)


class DiskBot(_OneAtATime, _Disk):
    """The null disk over BOT (alternate 0), one command at a time."""

    def apply(self) -> None:
        if self.device.superspeed:
            # Alternate 0 has no streams (SET_INTERFACE frees them on an xHCI).
            self.device.platform.free_streams(uas.STREAM_PIPES)
        super().apply()

    def _plan(self, direction: Direction, length: int, count: int,
              queue_depth: int) -> DiskRun:
        return self.device.disk_framing.bot_run(direction, length, count)

    @staticmethod
    def _result(plan: BotRun, direction: Direction, start: float, end: float) -> StreamResult:
        return plan.result(start, end)


class DiskUas(_Disk):
    """The null disk over UAS (alternate 1), ``queue_depth`` tags outstanding; at SuperSpeed
    with bulk streams on the status and data pipes (allocated as ``uas`` allocates them)."""

    def apply(self) -> None:
        super().apply()
        if self.device.superspeed:
            self.device.platform.alloc_streams(uas.STREAM_PIPES, MAX_STREAMS)

    def _plan(self, direction: Direction, length: int, count: int,
              queue_depth: int) -> DiskRun:
        return self.device.disk_framing.uas_run(direction, length, count, queue_depth,
                                                streams=self.device.superspeed)

    @staticmethod
    def _result(plan: UasRun, direction: Direction, start: float, end: float) -> StreamResult:
        return plan.result(direction, start, end)


class DiskRefused(UsbFraming):
    """Streams asked of the null disk: its bulk endpoints answer SCSI commands only, so a
    stream would NAK until the sweep's timeout; every point is refused in one line."""

    refusal: str = ""
    checks_own_data = True

    def refuse(self) -> None:
        raise InvalidRequest(f"{self.device.selector}: {self.refusal}")


def choose_framing(device: UsbDeviceTransport, protocol: Framing, *, disk_refusal: str,
                   loopback_refusal: str | None) -> UsbFraming:
    """The framing of ``protocol`` on ``device`` as its GET_INFO describes it (the only place
    that asks whether it is the stock design, the null disk or a stream device)."""
    if not device.platform.vendor_requests:
        return StockStream(device, protocol, loopback_refusal)
    if device.disk:
        if protocol == Framing.STREAM:
            refused = DiskRefused(device, protocol, loopback_refusal)
            refused.refusal = disk_refusal
            return refused
        kind = DiskBot if protocol == Framing.BOT else DiskUas
        return kind(device, protocol, loopback_refusal)
    if protocol == Framing.BOT:
        return FramerBot(device, protocol, loopback_refusal)
    return PatternStream(device, protocol, loopback_refusal)
