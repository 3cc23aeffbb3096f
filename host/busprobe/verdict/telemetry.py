"""What the device's counters say about the points of a plateau, per bus.

The verdict reads device telemetry through the summaries here. Counter names come from the one
contract: :data:`busprobe.protocol.usb2.TELEMETRY` and :data:`busprobe.protocol.pcie.TELEMETRY`
(the gateware's TLP telemetry); :data:`PCIE_KEYS` are the ones used, checked against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..protocol import pcie as pcie_protocol
from ..protocol import usb2 as usb2_protocol
from ..protocol import usb2_wire
from ..protocol.names import Direction

__all__ = ["Usb2Summary", "PcieSummary", "summarise_usb2", "summarise_pcie", "PCIE_KEYS",
           "pcie_clock_hz"]

_USB2_NAMES = {name for name, _ in usb2_protocol.TELEMETRY}
#: The PCIe counters the verdict uses.
PCIE_KEYS = ("wr_first_cycle", "wr_last_cycle", "rd_first_cycle", "rd_last_cycle",
             "tx_stall_cycles", "rx_stall_cycles", "rd_latency_min", "rd_latency_max",
             "rd_latency_sum", "rd_latency_count", "rd_outstanding_max")
assert set(PCIE_KEYS) <= {name for name, _ in pcie_protocol.TELEMETRY}, "protocol.pcie changed"
_DEFAULT_PCIE_CLOCK_HZ = pcie_protocol.CLOCK_HZ


def pcie_clock_hz(telemetry: Mapping[str, Any] | None = None) -> float:
    """Frequency of the clock the PCIe cycle counters count (the run's own record first)."""
    for key in ("clock_hz", "busprobe_clock_hz"):
        if telemetry and telemetry.get(key):
            return float(telemetry[key])
    return float(_DEFAULT_PCIE_CLOCK_HZ)


def _counter(telemetry: Mapping[str, Any], key: str) -> int | None:
    value = telemetry.get(key)
    return int(value) if isinstance(value, int | float) else None


@dataclass(frozen=True)
class Usb2Summary:
    """USB 2.0 counters over the plateau points of one direction.

    Attributes
    ----------
    tokens_max_uframe : int or None
        Most tokens the host sent the endpoint in one microframe (max over points).
    packets, tokens, naks, nyets, data_uframes : int
        Sums over points.
    busy_uframes : float or None
        Microframes from the first to the last data packet, summed over points.
    """

    tokens_max_uframe: int | None
    packets: int
    tokens: int
    naks: int
    nyets: int
    data_uframes: int
    busy_uframes: float | None

    @property
    def packets_per_data_uframe(self) -> float | None:
        return self.packets / self.data_uframes if self.data_uframes else None

    @property
    def data_uframe_fraction(self) -> float | None:
        """Share of the busy microframes that carried data (low: the host left gaps)."""
        if not self.busy_uframes or not self.data_uframes:
            return None
        return min(1.0, self.data_uframes / self.busy_uframes)


def summarise_usb2(telemetries: Iterable[Mapping[str, Any]], direction: str) -> Usb2Summary | None:
    """Sum ``in_*``/``out_*`` counters of ``direction``; None when no point has telemetry.

    ``loopback`` uses both endpoints: the packets that came back (IN), the OUT endpoint's
    tokens and NAKs (an IN NAK there only means the host's own data had not arrived yet), and
    no per-endpoint token maximum (each endpoint has only its share of a microframe).
    """
    if direction == Direction.LOOPBACK:
        telemetries = list(telemetries)
        back, sent = summarise_usb2(telemetries, "in"), summarise_usb2(telemetries, "out")
        if back is None or sent is None:
            return None
        return Usb2Summary(None, back.packets, sent.tokens, sent.naks, sent.nyets,
                           back.data_uframes, back.busy_uframes)
    seen = False
    tmax: int | None = None
    packets = tokens = naks = nyets = data_uframes = 0
    busy = 0.0
    busy_known = False
    for t in telemetries:
        if not t or not _USB2_NAMES & set(t):
            continue
        seen = True
        m = _counter(t, f"{direction}_tokens_max_uframe")
        if m is not None:
            tmax = m if tmax is None else max(tmax, m)
        packets += _counter(t, f"{direction}_packets") or 0
        tokens += _counter(t, f"{direction}_tokens") or 0
        naks += _counter(t, f"{direction}_naks") or 0
        if direction == Direction.OUT:
            nyets += _counter(t, "out_nyets") or 0
        data_uframes += _counter(t, "data_uframes") or 0
        first = _counter(t, f"{direction}_first_cycle")
        last = _counter(t, f"{direction}_last_cycle")
        if first is not None and last is not None and last > first:
            busy += (last - first) / usb2_wire.UFRAME_CYCLES
            busy_known = True
    if not seen:
        return None
    return Usb2Summary(tmax, packets, tokens, naks, nyets, data_uframes,
                       busy if busy_known else None)


@dataclass(frozen=True)
class PcieSummary:
    """PCIe TLP counters over the plateau points of one direction.

    Attributes
    ----------
    stall_fraction : float or None
        Cycles the link held off the device's TLPs (TX for writes, RX for reads) per cycle of the
        transfer window.
    latency_mean_ns, latency_min_ns, latency_max_ns : float or None
        Read request to completion, from the device's counters.
    outstanding_max : int or None
        Most read requests in flight.
    """

    stall_fraction: float | None
    latency_mean_ns: float | None
    latency_min_ns: float | None
    latency_max_ns: float | None
    outstanding_max: int | None


def summarise_pcie(telemetries: Iterable[Mapping[str, Any]],
                   direction: str) -> PcieSummary | None:
    prefix, stall_key = ("wr", "tx_stall_cycles") if direction == Direction.WRITE else \
        ("rd", "rx_stall_cycles")
    stalls = window = 0
    lat_sum = lat_count = 0
    lat_min: int | None = None
    lat_max: int | None = None
    outstanding: int | None = None
    clock = None
    seen = False
    for t in telemetries:
        if not t or not set(PCIE_KEYS) & set(t):
            continue
        seen = True
        clock = clock or pcie_clock_hz(t)
        first, last = _counter(t, f"{prefix}_first_cycle"), _counter(t, f"{prefix}_last_cycle")
        stall = _counter(t, stall_key)
        if first is not None and last is not None and last > first and stall is not None:
            stalls += stall
            window += last - first
        if direction == Direction.READ:
            count = _counter(t, "rd_latency_count") or 0
            if count:
                lat_sum += _counter(t, "rd_latency_sum") or 0
                lat_count += count
                lo, hi = _counter(t, "rd_latency_min"), _counter(t, "rd_latency_max")
                if lo is not None:
                    lat_min = lo if lat_min is None else min(lat_min, lo)
                if hi is not None:
                    lat_max = hi if lat_max is None else max(lat_max, hi)
            o = _counter(t, "rd_outstanding_max")
            if o is not None:
                outstanding = o if outstanding is None else max(outstanding, o)
    if not seen:
        return None
    ns = 1e9 / (clock or _DEFAULT_PCIE_CLOCK_HZ)
    return PcieSummary(
        stall_fraction=min(1.0, stalls / window) if window else None,
        latency_mean_ns=lat_sum / lat_count * ns if lat_count else None,
        latency_min_ns=lat_min * ns if lat_min is not None else None,
        latency_max_ns=lat_max * ns if lat_max is not None else None,
        outstanding_max=outstanding)
