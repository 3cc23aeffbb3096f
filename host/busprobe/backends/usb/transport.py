"""The busprobe USB device as a :class:`~busprobe.transport.Transport`, over any platform.

One driver for the board and the simulation: :class:`UsbDeviceTransport` holds every rule the
sweep relies on (validation, "OUT needs a source", ending IN transfers where the host's end,
the stock design's limits, patterns, telemetry) and runs the transfer plans (queued streams,
loopback, BOT) on a :class:`~busprobe.backends.usb.platform.UsbPlatform`, which offers only
endpoint 0 and a queue of bulk transfers.

The same driver runs the USB 2.0 and the SuperSpeed device: GET_INFO says which
(:attr:`VendorRequests.protocol`), and a SuperSpeed device is reported on a ``usb3-ss`` bus
with in, out and, where its INFO's protocol version has the LOOPBACK data mode
(:func:`busprobe.protocol.usb3.data_modes`), loopback; it has no BOT framing. A USB 2.0 device's
GET_INFO also names its optional parts (:class:`~busprobe.protocol.usb2.Feature`): BOT framing
is asked only of a bitstream that has the framer, and the counters it leaves out are left out of
its telemetry.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...buses import USB3_SS
from ...protocol import usb2, usb3
from ...protocol.patterns import Pattern
from ...transport import (
    BusDescription,
    InvalidRequest,
    Sink,
    Source,
    StreamResult,
    Telemetry,
    Transport,
    TransportError,
)
from .bot import BotCommands, BotRun, wrapper_bytes
from .disk import ALTERNATES, DiskFraming
from .plans import QueuedStream, loopback, loopback_result
from .platform import UsbPlatform
from .requests import VendorRequests
from .transfers import TransferPlan, run_plan, silence_for

__all__ = ["UsbDeviceTransport", "DISK_REFUSAL", "SS_DISK_REFUSAL", "SS_UAS_REFUSAL"]

#: Why a sweep of its own does not run on the storage personality (its endpoints answer SCSI
#: only, its data are the LBA pattern, not the sweep's), and what measures it instead.
DISK_REFUSAL = ("this is the usb2-storage null disk (SCSI over BOT on alternate 0, UAS on "
                "alternate 1; no busprobe streams): sweep it with --protocol bot or --protocol "
                "uas (busprobe's own framing), or sweep the block device a driver makes of it "
                "(block:/dev/sdX)")
#: The same for the SuperSpeed disk, which has BOT only (UAS at SuperSpeed needs bulk streams).
SS_DISK_REFUSAL = ("this is the usb3-storage null disk (SCSI over BOT; no busprobe streams): "
                   "sweep it with --protocol bot (busprobe's own framing), or sweep the block "
                   "device a driver makes of it (block:/dev/sdX)")
#: Why ``--protocol uas`` is refused on the SuperSpeed disk.
SS_UAS_REFUSAL = ("UAS at SuperSpeed needs bulk streams, which busprobe's SuperSpeed device does "
                  "not have (docs/DESIGN.md §2.13: what is missing); use --protocol bot")
#: bRequest of the standard SET_INTERFACE request (USB 2.0 §9.4.10).
SET_INTERFACE = 11


class UsbDeviceTransport(Transport):
    """A busprobe USB device (bulk IN source, bulk OUT sink) behind some :class:`UsbPlatform`.

    Parameters
    ----------
    platform : UsbPlatform
        Carries the control transfers and bulk streams.

    Attributes
    ----------
    platform : UsbPlatform
        As given (the simulation's exposes what the last stream cost).
    requests : VendorRequests
        The device's vendor requests over the platform's endpoint 0.
    """

    protocols = ("stream", "bot", "uas")
    #: What to do for BOT framing when the device lacks it (the end of the one-line refusal).
    bot_fix = "build and flash the usb2-full design (busprobe build --design usb2-full)"
    #: Entering or leaving loopback restarts the device's pattern streams (SET_DATA_MODE
    #: flushes what the IN ring had generated), so the sweep restarts its copies with them.
    loopback_restarts_pattern = True

    def __init__(self, platform: UsbPlatform) -> None:
        self.platform = platform
        self.selector = platform.name
        self.tool_path = getattr(platform, "tool_path", None)
        self.requests = VendorRequests(platform.control, name=platform.name)
        self.protocol = "stream"
        self.commands = BotCommands(platform.name)
        self.disk_framing = DiskFraming(platform.name, self.commands)
        self._opened = False
        self._mode: usb2.DataMode | None = None   # as last set; None: not known

    # -- life cycle ---------------------------------------------------------------------------
    def open(self) -> None:
        self.platform.open()
        self._opened = True
        try:
            if self.platform.vendor_requests:
                self.requests.check_info()
                if self.protocol != "stream":  # chosen before the INFO said what it is
                    self._superspeed_framing(self.protocol)
                    self._check_framing(self.protocol)
                # Whatever mode an earlier run left the device in, start from a known one.
                self._apply_protocol()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._opened = False
        try:
            self.platform.close()
        finally:
            self.requests.forget_state()
            self._mode = None

    def now(self) -> float:
        return self.platform.now()

    @property
    def superspeed(self) -> bool:
        """Whether the device's INFO named the SuperSpeed protocol."""
        return self.requests.protocol is usb3

    @property
    def bus(self) -> BusDescription:
        bus = replace(self.platform.bus(), max_packet_size=self.requests.max_packet_size,
                      protocol=self.protocol)
        if self.superspeed and bus.kind != USB3_SS.kind:
            # A real port reports the speed it negotiated; the device's INFO says what it is.
            bus = replace(bus, kind=USB3_SS.kind, speed="super")
        return bus

    def topology(self) -> list[dict[str, Any]]:
        return self.platform.topology()

    # -- what the device offers ---------------------------------------------------------------
    @property
    def directions(self) -> tuple[str, ...]:  # type: ignore[override]
        """``in`` and ``out``; ``loopback`` too where the design has busprobe's data modes."""
        if not self.platform.vendor_requests or (
                self.superspeed and usb2.DataMode.LOOPBACK not in self._superspeed_modes()):
            return ("in", "out")
        return ("in", "out", "loopback")

    def _superspeed_modes(self) -> tuple[usb2.DataMode, ...]:
        return usb3.data_modes(self.requests.info.get("version", usb3.PROTOCOL_VERSION))

    def _superspeed_refuses(self, what: str, mode: usb2.DataMode | None = None) -> None:
        """Refuse ``what`` in one line on a SuperSpeed device, unless its INFO names ``mode``."""
        if self.superspeed and mode not in self._superspeed_modes():
            modes = ", ".join(m.name for m in self._superspeed_modes())
            *others, last = self.directions
            raise InvalidRequest(f"{self.selector}: the SuperSpeed device has no {what} "
                                 f"(its data modes: {modes}); use {', '.join(others)} or {last}")

    def _superspeed_framing(self, protocol: str) -> None:
        """Refuse ``protocol`` framing in one line on a SuperSpeed device, but BOT on the
        SuperSpeed null disk."""
        if self.superspeed and self.disk:
            if protocol == "uas":
                raise InvalidRequest(f"{self.selector}: {SS_UAS_REFUSAL}")
            if protocol == "bot":
                return
        self._superspeed_refuses(f"{protocol.upper()} framing")

    @property
    def disk(self) -> bool:
        """Whether the device's INFO (or the simulated design) says it is the null disk."""
        features = self.requests.features
        return features is not None and usb2.Feature.STORAGE in features

    @property
    def checks_own_data(self) -> bool:  # type: ignore[override]
        """The null disk's data are the LBA pattern: the transport makes and checks them."""
        return self.disk

    def _check_framing(self, protocol: str) -> None:
        """Refuse ``protocol`` in one line where the device cannot carry it: UAS on anything but
        the null disk; BOT when the device's INFO (or a preset, :attr:`VendorRequests.features`)
        says it has no framer (it would STALL SET_DATA_MODE) and is not the disk."""
        features = self.requests.features
        if protocol == "uas" and features is not None and not self.disk:
            raise InvalidRequest(f"{self.selector}: UAS framing needs the usb2-storage null "
                                 f"disk (busprobe build --design usb2-storage; "
                                 f"sim:usb2?design=storage)")
        if protocol != "bot" or self.disk:
            return
        if features is not None and usb2.DataMode.BOT not in usb2.data_modes(features):
            raise InvalidRequest(f"{self.selector}: this bitstream has no BOT framer (the lean "
                                 f"default usb2 design leaves it out); {self.bot_fix}")

    def _refuse_streams_on_a_disk(self) -> None:
        """Refuse a sweep in one line when the device's INFO (or the simulated design) says it
        is the storage personality: its bulk endpoints answer SCSI commands only, so a stream
        would NAK until the sweep's timeout."""
        if self.disk and self.protocol == "stream":
            refusal = SS_DISK_REFUSAL if self.superspeed else DISK_REFUSAL
            raise InvalidRequest(f"{self.selector}: {refusal}")

    def validate(self, direction: str, length: int, queue_depth: int) -> None:
        self._refuse_streams_on_a_disk()
        if direction == "loopback":
            self._superspeed_refuses("loopback", usb2.DataMode.LOOPBACK)
        super().validate(direction, length, queue_depth)
        if direction == "loopback" and self.protocol != "stream":
            name = self.protocol.upper()
            raise InvalidRequest(f"{name} frames in and out transfers; loopback streams both "
                                 f"directions at once and has no {name} form")
        if self.disk:
            self.disk_framing.validate(length)
        if length >= usb2.IN_ZLP_FLAG:
            raise InvalidRequest(f"USB transfer length {length} does not fit SET_IN_TRANSFER "
                                 f"(at most {usb2.IN_ZLP_FLAG - 1} bytes)")
        packet = self.requests.max_packet_size
        if self.protocol == "bot" and queue_depth != 1:
            raise InvalidRequest(f"BOT runs one command at a time: queue depth must be 1, "
                                 f"not {queue_depth}")
        if not self.platform.vendor_requests and direction == "in" and length % packet:
            raise InvalidRequest(f"{self.selector}: the stock design ends no IN transfer with a "
                                 f"short packet; use lengths that are multiples of {packet}")

    def set_protocol(self, protocol: str) -> None:
        """``stream`` (the default), ``bot`` or ``uas`` (the null disk only): sent to the device
        now if it is open, else when it opens."""
        super().set_protocol(protocol)
        if protocol != "stream":
            self._superspeed_framing(protocol)
        if protocol != "stream" and not self.platform.vendor_requests:
            raise InvalidRequest(f"{self.selector}: the stock design has no "
                                 f"{protocol.upper()} framing")
        self._check_framing(protocol)
        self.protocol = protocol
        if self._opened:
            self._apply_protocol()

    def _apply_protocol(self) -> None:
        """Put the device in the protocol's data mode, whatever it was in (sent every time);
        the null disk, which has no data modes, in the protocol's alternate setting (which
        restarts its engines and flushes its endpoints: a reset recovery too)."""
        if self.disk:
            if self.protocol in ALTERNATES:
                self.platform.control(0x01, SET_INTERFACE, ALTERNATES[self.protocol], 0, b"")
            return
        self._set_mode(usb2.DataMode.BOT if self.protocol == "bot" else usb2.DataMode.PATTERN,
                       again=True)

    def _set_mode(self, mode: usb2.DataMode, *, again: bool = False) -> None:
        """Put the device in data ``mode`` (sent only on change, unless ``again``)."""
        if mode == self._mode and not again:
            return
        self.requests.set_data_mode(mode)
        self._mode = mode
        if mode != usb2.DataMode.PATTERN:
            # The BOT framer and the loopback close their packets themselves: the IN endpoint
            # must not cut them at a transfer length left over from a streamed run.
            self.requests.set_in_transfer(0)

    def set_pattern(self, pattern: Pattern) -> None:
        if self.platform.vendor_requests:
            self.requests.set_pattern(pattern)
        elif pattern != Pattern.COUNTER:
            raise InvalidRequest(f"{self.selector}: the stock design only streams COUNTER")

    def clear_telemetry(self) -> None:
        if self.platform.vendor_requests:
            self.requests.clear_telemetry()
        self.commands.since_clear = 0

    def read_telemetry(self) -> Telemetry:
        if not self.platform.vendor_requests:
            return Telemetry()
        counters = self.requests.read_telemetry()
        if self.protocol in ("bot", "uas"):
            # In BOT the device counts CBWs and CSWs with the data (UAS's IUs go on pipes of
            # their own); the sweep checks data bytes. Its microframe window times the wrappers
            # and the gaps between stages too, so the host's window is the only timing (the
            # CSW or SENSE IU closes each command anyway).
            if self.protocol == "bot":
                for direction, extra in wrapper_bytes(self.commands.since_clear).items():
                    if direction in counters.device_bytes:
                        counters.device_bytes[direction] -= extra
            counters.device_seconds.clear()
            counters.window_bytes.clear()
        elif self._mode == usb2.DataMode.LOOPBACK:
            # Timed by the slower direction's window: in each microframe one direction gets 7
            # of the 13 transactions and the other 6, alternately, so a window of an odd number
            # of microframes shows one direction above the 6.5 packets both average; the
            # other, over nearly the same microframes, then shows less. What the device
            # received was checked on OUT. Both byte counts must equal what the host asked.
            rates = {key: counters.device_throughput(key) for key in ("in", "out")}
            if None not in rates.values():
                slower = min(rates, key=lambda key: rates[key])
                counters.device_seconds["loopback"] = counters.device_seconds[slower]
                counters.window_bytes["loopback"] = counters.window_bytes.get(
                    slower, counters.device_bytes[slower])
            for table in (counters.errors, counters.first_error_offset):
                if "out" in table:
                    table["loopback"] = table["out"]
            counters.device_bytes["loopback"] = min(counters.device_bytes["in"],
                                                    counters.device_bytes["out"])
        return counters

    # -- streaming ----------------------------------------------------------------------------
    def _run(self, plan: TransferPlan, length: int, what: str) -> tuple[float, float]:
        return run_plan(self.platform, plan, what=f"{self.selector}: {what}",
                        silence=silence_for(length, self.platform.emulated))

    def stream(self, direction: str, length: int, count: int, queue_depth: int,
               source: Source | None = None, sink: Sink | None = None) -> StreamResult:
        self.validate(direction, length, queue_depth)
        if count < 1:
            raise InvalidRequest(f"transfer count must be at least 1, not {count}")
        if self.disk:
            return self._stream_disk(direction, length, count, queue_depth)
        outgoing: list[bytes] | None = None
        if direction in ("out", "loopback"):
            if source is None:
                article = "an OUT" if direction == "out" else "a loopback"
                raise InvalidRequest(f"{article} stream needs a data source")
            outgoing = [source(length) for _ in range(count)]
        if self.protocol == "bot":
            return self._stream_bot(direction, length, count, outgoing, sink)
        if direction == "loopback":
            self._set_mode(usb2.DataMode.LOOPBACK)
            pair = loopback(length, count, queue_depth, outgoing or [],
                            what=f"{self.selector}: loopback")
            start, end = self._run(pair, length, "loopback transfer")
            pair.plans[1].deliver(sink)
            return loopback_result(pair, start, end)
        if self.platform.vendor_requests:
            self._set_mode(usb2.DataMode.PATTERN)
            if direction == "in":
                # The device ends each IN transfer where the host's transfer ends, so a short
                # length completes with a short packet instead of waiting for more data.
                self.requests.set_in_transfer(length)
        endpoint = usb2.EP_IN if direction == "in" else usb2.EP_OUT
        plan = QueuedStream(endpoint, length, count, queue_depth, outgoing=outgoing,
                            what=f"{self.selector}: {direction} transfer")
        start, end = self._run(plan, length, f"{direction} transfer")
        plan.deliver(sink)
        return plan.result(start, end)

    def _stream_bot(self, direction: str, length: int, count: int,
                    outgoing: list[bytes] | None, sink: Sink | None) -> StreamResult:
        """``count`` BOT commands of ``length`` bytes, each CBW -> data -> CSW, one at a time."""
        cbws = self.commands.cbws(direction, length, count)
        what = f"BOT {direction} command"
        run = BotRun([c.pack() for c in cbws], direction, length, outgoing,
                     what=f"{self.selector}: {what}")
        start, end = self._run(run, length, what)
        run.deliver(sink)
        try:
            self.commands.check(cbws, run.csws)
        except TransportError:
            # Reset recovery, as a mass-storage driver does after a failed command: the framer
            # waits for a CBW again and nothing stale stays buffered (a device already gone
            # keeps the first error).
            try:
                self._apply_protocol()
            except TransportError:
                pass
            raise
        return run.result(start, end)

    def _stream_disk(self, direction: str, length: int, count: int,
                     queue_depth: int) -> StreamResult:
        """``count`` READ(10) or WRITE(10) commands of ``length`` bytes to the null disk in the
        protocol's framing; IN data checked against the LBA pattern, OUT data made from it
        (the disk counts a write's mismatches: :meth:`read_telemetry`'s device errors)."""
        framing = self.disk_framing
        if self.protocol == "bot":
            run = framing.bot_run(direction, length, count)
        else:
            run = framing.uas_run(direction, length, count, queue_depth)
        what = f"{self.protocol.upper()} {direction} command"
        start, end = self._run(run.plan, length, what)
        try:
            mismatched, first = framing.check(run)
        except TransportError:
            try:  # reset recovery: SET_INTERFACE restarts the disk's engines and endpoints
                self._apply_protocol()
            except TransportError:
                pass
            raise
        plan = run.plan
        result = plan.result(start, end) if isinstance(plan, BotRun) \
            else plan.result(direction, start, end)
        return replace(result, mismatched_words=mismatched, first_error_offset=first)
