"""The busprobe USB device as a :class:`~busprobe.transport.Transport`, over any platform.

One driver for the board and the simulation: :class:`UsbDeviceTransport` holds every rule the
sweep relies on (validation, "OUT needs a source", ending IN transfers where the host's end,
the stock design's limits, patterns, telemetry) and leaves only endpoint 0 and bulk streaming to
a :class:`~busprobe.backends.usb.platform.UsbPlatform`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...protocol import usb2
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
from .platform import UsbPlatform
from .requests import VendorRequests

__all__ = ["UsbDeviceTransport"]


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

    directions = ("in", "out")

    def __init__(self, platform: UsbPlatform) -> None:
        self.platform = platform
        self.selector = platform.name
        self.requests = VendorRequests(platform.control, name=platform.name)

    # -- life cycle ---------------------------------------------------------------------------
    def open(self) -> None:
        self.platform.open()
        try:
            if self.platform.vendor_requests:
                self.requests.check_info()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        try:
            self.platform.close()
        finally:
            self.requests.forget_state()

    def now(self) -> float:
        return self.platform.now()

    @property
    def bus(self) -> BusDescription:
        return replace(self.platform.bus(), max_packet_size=self.requests.max_packet_size)

    def topology(self) -> list[dict[str, Any]]:
        return self.platform.topology()

    # -- what the device offers ---------------------------------------------------------------
    def validate(self, direction: str, length: int, queue_depth: int) -> None:
        super().validate(direction, length, queue_depth)
        if length >= usb2.IN_ZLP_FLAG:
            raise InvalidRequest(f"USB transfer length {length} does not fit SET_IN_TRANSFER "
                                 f"(at most {usb2.IN_ZLP_FLAG - 1} bytes)")
        packet = self.requests.max_packet_size
        if not self.platform.vendor_requests and direction == "in" and length % packet:
            raise InvalidRequest(f"{self.selector}: the stock design ends no IN transfer with a "
                                 f"short packet; use lengths that are multiples of {packet}")

    def set_pattern(self, pattern: Pattern) -> None:
        if self.platform.vendor_requests:
            self.requests.set_pattern(pattern)
        elif pattern != Pattern.COUNTER:
            raise InvalidRequest(f"{self.selector}: the stock design only streams COUNTER")

    def clear_telemetry(self) -> None:
        if self.platform.vendor_requests:
            self.requests.clear_telemetry()

    def read_telemetry(self) -> Telemetry:
        if not self.platform.vendor_requests:
            return Telemetry()
        return self.requests.read_telemetry()

    # -- streaming ----------------------------------------------------------------------------
    def stream(self, direction: str, length: int, count: int, queue_depth: int,
               source: Source | None = None, sink: Sink | None = None) -> StreamResult:
        self.validate(direction, length, queue_depth)
        if count < 1:
            raise InvalidRequest(f"transfer count must be at least 1, not {count}")
        outgoing: list[bytes] | None = None
        if direction == "in":
            if self.platform.vendor_requests:
                # The device ends each IN transfer where the host's transfer ends, so a short
                # length completes with a short packet instead of waiting for more data.
                self.requests.set_in_transfer(length)
            endpoint = usb2.EP_IN
        else:
            if source is None:
                raise InvalidRequest("an OUT stream needs a data source")
            outgoing = [source(length) for _ in range(count)]
            endpoint = usb2.EP_OUT
        return self.platform.bulk(endpoint, length, count, queue_depth, outgoing, sink)
