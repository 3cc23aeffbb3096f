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
from ...protocol.names import Direction, Framing
from ...protocol.patterns import Pattern
from ...transport import (
    BusDescription,
    InvalidRequest,
    Sink,
    Source,
    StreamResult,
    Telemetry,
    Transport,
)
from .bot import BotCommands
from .disk import DiskFraming
from .framings import UsbFraming, choose_framing
from .platform import UsbPlatform
from .requests import VendorRequests
from .transfers import TransferPlan, run_plan, silence_for

__all__ = ["UsbDeviceTransport", "DISK_REFUSAL", "SS_DISK_REFUSAL"]

#: Why a sweep of its own does not run on the storage personality (its endpoints answer SCSI
#: only, its data are the LBA pattern, not the sweep's), and what measures it instead.
DISK_REFUSAL = ("this is the usb2-storage null disk (SCSI over BOT on alternate 0, UAS on "
                "alternate 1; no busprobe streams): sweep it with --protocol bot or --protocol "
                "uas (busprobe's own framing), or sweep the block device a driver makes of it "
                "(block:/dev/sdX)")
#: The same for the SuperSpeed disk (UAS on alternate 1 with bulk streams).
SS_DISK_REFUSAL = ("this is the usb3-storage null disk (SCSI over BOT on alternate 0, UAS with "
                   "bulk streams on alternate 1; no busprobe streams): sweep it with --protocol "
                   "bot or --protocol uas (busprobe's own framing), or sweep the block device a "
                   "driver makes of it (block:/dev/sdX)")
class UsbDeviceTransport(Transport):
    """A busprobe USB device (bulk IN source, bulk OUT sink) behind some :class:`UsbPlatform`.

    What the device is (the stock design, a stream device, the BOT framer, the null disk) is
    asked once, when it opens or the sweep sets a protocol: :func:`~.framings.choose_framing`
    picks the :class:`~.framings.UsbFraming` that carries every point from then on.

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

    protocols = tuple(Framing)
    #: What to do for BOT framing when the device lacks it (the end of the one-line refusal).
    bot_fix = "build and flash the usb2-full design (busprobe build --design usb2-full)"
    #: Entering or leaving loopback restarts the device's pattern streams (SET_DATA_MODE
    #: flushes what the IN ring had generated), so the sweep restarts its copies with them.
    loopback_restarts_pattern = True

    def __init__(self, platform: UsbPlatform) -> None:
        self.platform = platform
        self.selector = platform.name
        self.tool_path = platform.tool_path
        self.requests = VendorRequests(platform.control, name=platform.name)
        self.protocol = Framing.STREAM
        self.commands = BotCommands(platform.name)
        self.disk_framing = DiskFraming(platform.name, self.commands)
        self._opened = False
        self._mode: usb2.DataMode | None = None   # as last set; None: not known
        self._framing: UsbFraming | None = None   # chosen at open(); None: not yet

    # -- life cycle ---------------------------------------------------------------------------
    def open(self) -> None:
        self.platform.open()
        self._opened = True
        try:
            if self.platform.vendor_requests:
                self.requests.check_info()
                if self.protocol != Framing.STREAM:  # chosen before the INFO said what it is
                    self._superspeed_framing(self.protocol)
                    self._check_framing(self.protocol)
            self._framing = self._choose()
            # Whatever mode an earlier run left the device in, start from a known one.
            self._framing.apply()
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
            self._framing = None

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
    def directions(self) -> tuple[Direction, ...]:  # type: ignore[override]
        """``in`` and ``out``; ``loopback`` too where the design has busprobe's data modes."""
        if not self.platform.vendor_requests or (
                self.superspeed and usb2.DataMode.LOOPBACK not in self._superspeed_modes()):
            return (Direction.IN, Direction.OUT)
        return (Direction.IN, Direction.OUT, Direction.LOOPBACK)

    def _superspeed_modes(self) -> tuple[usb2.DataMode, ...]:
        return usb3.data_modes(self.requests.info.get("version", usb3.PROTOCOL_VERSION))

    def _superspeed_refusal(self, what: str, mode: usb2.DataMode | None = None) -> str | None:
        """The one-line refusal of ``what`` on a SuperSpeed device whose INFO does not name
        ``mode``; None where it is no SuperSpeed device or names it."""
        if self.superspeed and mode not in self._superspeed_modes():
            modes = ", ".join(m.name for m in self._superspeed_modes())
            *others, last = self.directions
            return (f"{self.selector}: the SuperSpeed device has no {what} "
                    f"(its data modes: {modes}); use {', '.join(others)} or {last}")
        return None

    def _superspeed_framing(self, protocol: Framing) -> None:
        """Refuse ``protocol`` framing in one line on a SuperSpeed device, but BOT and UAS on
        the SuperSpeed null disk."""
        if self.superspeed and self.disk and protocol in (Framing.BOT, Framing.UAS):
            return
        refusal = self._superspeed_refusal(f"{protocol.upper()} framing")
        if refusal:
            raise InvalidRequest(refusal)

    @property
    def disk(self) -> bool:
        """Whether the device's INFO (or the simulated design) says it is the null disk."""
        features = self.requests.features
        return features is not None and usb2.Feature.STORAGE in features

    @property
    def checks_own_data(self) -> bool:  # type: ignore[override]
        """The null disk's data are the LBA pattern: the transport makes and checks them."""
        return self.framing.checks_own_data

    @property
    def framing(self) -> UsbFraming:
        """How points go on the bus: chosen when the device opened (or the protocol was set
        while open); before that, from what is known of the device (a simulated design's
        features), so a point is refused before a simulator is built."""
        return self._framing if self._framing is not None else self._choose()

    @property
    def mode(self) -> usb2.DataMode | None:
        """The data mode last set (None: not known)."""
        return self._mode

    def _check_framing(self, protocol: Framing) -> None:
        """Refuse ``protocol`` in one line where the device cannot carry it: UAS on anything but
        the null disk; BOT when the device's INFO (or a preset, :attr:`VendorRequests.features`)
        says it has no framer (it would STALL SET_DATA_MODE) and is not the disk."""
        features = self.requests.features
        if protocol == Framing.UAS and features is not None and not self.disk:
            raise InvalidRequest(f"{self.selector}: UAS framing needs the usb2-storage null "
                                 f"disk (busprobe build --design usb2-storage; "
                                 f"sim:usb2?design=storage)")
        if protocol != Framing.BOT or self.disk:
            return
        if features is not None and usb2.DataMode.BOT not in usb2.data_modes(features):
            raise InvalidRequest(f"{self.selector}: this bitstream has no BOT framer (the lean "
                                 f"default usb2 design leaves it out); {self.bot_fix}")

    def _choose(self) -> UsbFraming:
        """The framing of :attr:`protocol` on this device, as its INFO describes it."""
        return choose_framing(
            self, self.protocol, disk_refusal=SS_DISK_REFUSAL if self.superspeed else DISK_REFUSAL,
            loopback_refusal=self._superspeed_refusal("loopback", usb2.DataMode.LOOPBACK))

    def validate_generic(self, direction: str, length: int, queue_depth: int) -> None:
        """The rules of every transport (:meth:`Transport.validate`), for the framing."""
        super().validate(direction, length, queue_depth)

    def validate(self, direction: str, length: int, queue_depth: int) -> None:
        self.framing.validate(direction, length, queue_depth)  # type: ignore[arg-type]

    def set_protocol(self, protocol: str) -> None:
        """``stream`` (the default), ``bot`` or ``uas`` (the null disk only): sent to the device
        now if it is open, else when it opens."""
        super().set_protocol(protocol)
        framing = Framing.parse(protocol)
        if framing != Framing.STREAM:
            self._superspeed_framing(framing)
        if framing != Framing.STREAM and not self.platform.vendor_requests:
            raise InvalidRequest(f"{self.selector}: the stock design has no "
                                 f"{framing.upper()} framing")
        self._check_framing(framing)
        self.protocol = framing
        if self._opened:
            self._framing = self._choose()
            self._framing.apply()

    def set_mode(self, mode: usb2.DataMode, *, again: bool = False) -> None:
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
        self.framing.set_pattern(pattern)

    def clear_telemetry(self) -> None:
        self.framing.clear_telemetry()
        self.commands.since_clear = 0

    def read_telemetry(self) -> Telemetry:
        return self.framing.read_telemetry()

    # -- streaming ----------------------------------------------------------------------------
    def run(self, plan: TransferPlan, length: int, what: str) -> tuple[float, float]:
        """Run ``plan`` (transfers of ``length`` bytes) on the platform: its host-timed
        window."""
        return run_plan(self.platform, plan, what=f"{self.selector}: {what}",
                        silence=silence_for(length, self.platform.emulated))

    def stream(self, direction: str, length: int, count: int, queue_depth: int,
               source: Source | None = None, sink: Sink | None = None) -> StreamResult:
        self.validate(direction, length, queue_depth)
        if count < 1:
            raise InvalidRequest(f"transfer count must be at least 1, not {count}")
        return self.framing.stream(Direction(direction), length, count, queue_depth, source,
                                   sink)
