"""PCI Express DMA ceiling: device writes (posted MWr) and device reads (MRd + completions).

Per lane, after line coding (PCIe Base 3.0 §4.2, §4.2.2)::

    gen1 2.5 GT/s × 8/10 / 8 = 250 MB/s    gen2 5 GT/s × 8/10 / 8 = 500 MB/s
    gen3 8 GT/s × 128/130 / 8 = 984.6 MB/s

Every TLP carries 8 B of framing on the wire: Gen1/2 STP 1 + sequence 2 + LCRC 4 + END 1; Gen3 STP
token 4 (holds the sequence number) + LCRC 4. Headers are 12 B (3DW) or 16 B (4DW, 64-bit
addresses; completions are always 3DW); ECRC adds 4 B. A DLLP (ACK, UpdateFC) is 8 B on the wire.
TLPs start on a 4-symbol boundary and are multiples of 4 bytes, so lane striping wastes nothing.
SKP ordered sets take about 0.3 % (4 symbols per ~1359 on Gen1/2, one 16-symbol block per ~372 on
Gen3) unless ``skp`` is off (cocotbext-pcie does not send them), or 4 per ``skp_interval`` where a
transmitter's interval is known. Unprompted UpdateFCs (§2.6.1.2: at least every 30 µs in L0, each
non-infinite type), where ``fc_update_us`` is given, take ``fc_update_dllps`` × 8 B per interval
on each lane (Gen1 x1, 30 µs, P and NP: 16 B per 7500, 0.21 %).

Write (data flows upstream)::

    per TLP on the upstream lane = header + MPS + ECRC + 8
    ceiling = lane rate × width × (1 - SKP) × MPS / that

The ACK (one per ``ack_every`` TLPs) and UpdateFC-P (one per ``updatefc_every``) that answer the
writes travel *downstream*, so they cost the write direction nothing.

Read (data flows downstream)::

    per MRd of MRRS bytes: n = ceil(MRRS / c) completions, c = RCB when the completer splits at
    every RCB, else MPS
    downstream lane = n × (12 + ECRC + 8) + MRRS + 8/ack_every + 8/updatefc_every (ACK and
                      UpdateFC-NP for the request)
    upstream lane   = header + ECRC + 8 + n × 8/ack_every (ACKs for the completions; an endpoint
                      advertises infinite completion credits, so no UpdateFC-Cpl)
    ceiling = lane rate × width × (1 - SKP) × MRRS / max(downstream, upstream)

Loopback (the device reads a buffer and writes it back: both lanes carry data at once)::

    per loopback byte, upstream   = write TLP wire / MPS + (MRd + n × ACK) / MRRS
                       downstream = read downstream / MRRS + (ACK + UpdateFC-P) / MPS
    ceiling = lane rate × width × (1 - SKP) / max(upstream, downstream)

and, when a read latency and a limit on outstanding requests are given (Little's law)::

    ceiling <= outstanding × MRRS / (latency + MRRS's time on the lane)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ..protocol.names import Direction
from ..transport import BusDescription
from .ceiling_type import Ceiling

__all__ = [
    "PcieAssumptions", "pcie_ceiling", "pcie_link_only", "describe_pcie", "lane_rate",
    "tlp_wire_bytes",
    "LANE_RATE", "FRAMING_BYTES", "DLLP_BYTES", "SKP_FRACTION", "PAYLOAD_SIZES", "LINK_WIDTHS",
]

#: Payload bytes per second per lane after 8b/10b or 128b/130b coding.
LANE_RATE: dict[int, float] = {1: 2.5e9 * 8 / 10 / 8, 2: 5e9 * 8 / 10 / 8, 3: 8e9 * 128 / 130 / 8}
#: STP + sequence + LCRC + END (Gen1/2) or STP token + LCRC (Gen3): 8 B either way.
FRAMING_BYTES = 8
#: §3.4: a DLLP is 6 B plus SDP/END framing (Gen3: 2-byte SDP token) = 8 B.
DLLP_BYTES = 8
ECRC_BYTES = 4
CPL_HEADER_BYTES = 12
#: §4.2.7 (Gen1/2: 4-symbol SKP OS every 1180..1538 symbol times, midpoint 1359) and §4.2.7.3
#: (Gen3: one 16-symbol SKP block every 370..375 blocks, midpoint 372).
SKP_FRACTION: dict[int, float] = {1: 4 / (1359 + 4), 2: 4 / (1359 + 4), 3: 1 / (372 + 1)}
PAYLOAD_SIZES = (128, 256, 512, 1024, 2048, 4096)
LINK_WIDTHS = (1, 2, 4, 8, 12, 16, 32)


@dataclass(frozen=True)
class PcieAssumptions:
    """What the PCIe model assumes beyond the negotiated link; every field can be overridden
    through ``BusDescription.extra`` (same key), so a simulation states its own.

    Attributes
    ----------
    ack_every : int
        TLPs a receiver accepts per ACK DLLP it sends back (0: no ACKs counted).
    updatefc_every : int
        TLPs a receiver accepts per UpdateFC DLLP it sends back (0: none counted).
    rcb : int
        Read Completion Boundary of the completer, 64 or 128 bytes.
    split_at_rcb : bool
        The completer returns one completion per RCB (many root complexes do); otherwise
        completions are as large as MPS allows (cocotbext-pcie's default).
    addr64 : bool
        Requests use 4DW headers (64-bit addresses above 4 GiB).
    ecrc : bool
        TLPs carry an ECRC digest.
    skp : bool
        Count SKP ordered sets.
    read_latency_ns : float
        From a read request leaving the device to its first completion arriving (0: unknown,
        no latency bound).
    outstanding_reads : int
        Read requests the device keeps in flight (tags); used with ``read_latency_ns``.
    descriptor_writes : int
        32-bit MMIO writes the host makes per transfer to queue its DMA descriptors; they go
        downstream, the lane read completions take (busprobe's driver: one descriptor per
        transfer, two writes; a 24-byte TLP each).
    skp_interval : int
        Gen1/2 symbol times from one SKP ordered set to the next, where the transmitter's is
        known (0: the midpoint of §4.2.7's 1180..1538).
    fc_update_us : float
        Microseconds between the unprompted UpdateFCs a receiver sends in L0 (§2.6.1.2: 30; 0:
        not counted).
    fc_update_dllps : int
        UpdateFC DLLPs sent each ``fc_update_us`` (one per non-infinite credit type).
    tx_buffer_tlps : int
        TLPs the hard IP's transmit buffer holds after the device has handed them over (the
        simulated PHY states 4; -1: not known). The device times writes at that hand-over, so
        the last of them leave its window early: :func:`pcie_ceiling` bounds the device-timed
        figure only where this is known.
    """

    ack_every: int = 4
    updatefc_every: int = 4
    rcb: int = 64
    split_at_rcb: bool = False
    addr64: bool = False
    ecrc: bool = False
    skp: bool = True
    read_latency_ns: float = 0.0
    outstanding_reads: int = 32
    descriptor_writes: int = 2
    skp_interval: int = 0
    fc_update_us: float = 0.0
    fc_update_dllps: int = 2
    tx_buffer_tlps: int = -1

    @classmethod
    def from_extra(cls, extra: dict[str, Any]) -> PcieAssumptions:
        names = {f.name: f.type for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in extra.items():
            if key not in names:
                continue
            default = getattr(cls, key)
            try:
                if isinstance(default, bool):
                    values[key] = value if isinstance(value, bool) else \
                        str(value).lower() in ("1", "true", "yes", "on")
                else:
                    values[key] = type(default)(value)
            except (TypeError, ValueError):
                raise ValueError(f"PCIe model: bad {key} {value!r}") from None
        assumptions = replace(cls(), **values)
        if assumptions.rcb not in (64, 128):
            raise ValueError(f"read completion boundary must be 64 or 128, not {assumptions.rcb}")
        if assumptions.skp_interval and not 1180 <= assumptions.skp_interval <= 1538 + 4:
            raise ValueError(f"SKP interval {assumptions.skp_interval} is outside 1180..1542")
        if assumptions.ack_every < 0 or assumptions.updatefc_every < 0:
            raise ValueError("PCIe model: ack_every/updatefc_every must be >= 0")
        return assumptions


def lane_rate(gen: int) -> float:
    if gen not in LANE_RATE:
        raise ValueError(f"PCIe generation must be 1, 2 or 3, not {gen}")
    return LANE_RATE[gen]


def tlp_wire_bytes(payload: int, *, header: int = 12, ecrc: bool = False) -> int:
    """Bytes one TLP occupies on the wire: framing + header + payload + optional ECRC."""
    return FRAMING_BYTES + header + payload + (ECRC_BYTES if ecrc else 0)


def _generation(bus: BusDescription) -> int:
    speed = bus.speed.lower().removeprefix("gen")
    if not speed.isdigit():
        raise ValueError(f"PCIe speed {bus.speed!r}: expected gen1, gen2 or gen3")
    gen = int(speed)
    lane_rate(gen)
    return gen


def _dllp_cost(every: int) -> float:
    return DLLP_BYTES / every if every else 0.0


def pcie_link_only(bus: BusDescription) -> BusDescription:
    """``bus`` without the root complex's read latency: what the link itself allows."""
    return replace(bus, extra={k: v for k, v in bus.extra.items() if k != "read_latency_ns"})


def describe_pcie(bus: BusDescription) -> str:
    """One line naming the configuration (``busprobe model``)."""
    return f"pcie {bus.speed} x{bus.width}, MPS {bus.mps}, MRRS {bus.mrrs}"


def pcie_ceiling(bus: BusDescription, direction: str, *, length: int | None = None,
                 queue_depth: int | None = None, transfers: int | None = None) -> Ceiling:
    """Ceiling of a PCIe DMA ``direction`` (``write``/``read``) on ``bus`` (see module).

    With ``transfers`` (and a length), the ceiling of one measured run: on the host's clock the
    per-transfer figure (a run's start-up and the wait for its last completion only add time),
    and in ``parts["device_ceiling"]`` what the device's window can read (:func:`_device_window`).
    """
    gen = _generation(bus)
    if bus.width not in LINK_WIDTHS:
        raise ValueError(f"PCIe link width x{bus.width} does not exist "
                         f"(x{', x'.join(map(str, LINK_WIDTHS))})")
    mps = bus.mps or 128
    mrrs = bus.mrrs or 512
    for name, value in (("MPS", mps), ("MRRS", mrrs)):
        if value not in PAYLOAD_SIZES:
            raise ValueError(f"{name} {value} is not one of {', '.join(map(str, PAYLOAD_SIZES))}")
    a = PcieAssumptions.from_extra(bus.extra)
    skp = 0.0
    if a.skp:
        skp = 4 / a.skp_interval if a.skp_interval and gen < 3 else SKP_FRACTION[gen]
    raw = lane_rate(gen) * bus.width
    # Periodic UpdateFCs: so many DLLP bytes per interval of the whole link's bytes.
    fc = a.fc_update_dllps * DLLP_BYTES / (a.fc_update_us * 1e-6 * raw) if a.fc_update_us else 0.0
    rate = raw * (1 - skp - fc)
    req_header = 16 if a.addr64 else 12
    ecrc = ECRC_BYTES if a.ecrc else 0
    lines = [f"link = gen{gen} {lane_rate(gen) / 1e6:.1f} MB/s/lane × x{bus.width}"
             f" = {raw / 1e6:.1f} MB/s; SKP {skp * 100:.2f} %"
             + (f", periodic UpdateFC {fc * 100:.2f} %" if fc else "")
             + f" -> {rate / 1e6:.1f} MB/s"]
    parts: dict[str, Any] = {"gen": gen, "width": bus.width, "mps": mps, "mrrs": mrrs,
                             "lane_rate": lane_rate(gen), "link_rate": raw, "skp_fraction": skp,
                             "fc_update_fraction": fc,
                             "assumptions": asdict(a)}
    if direction == Direction.WRITE:
        throughput = _write(rate, mps, req_header, ecrc, a, length, lines, parts)
        model = f"pcie gen{gen} x{bus.width} write MPS {mps}"
    elif direction == Direction.LOOPBACK:
        throughput = _loopback(rate, mps, mrrs, req_header, ecrc, a, lines, parts)
        model = f"pcie gen{gen} x{bus.width} loopback MPS {mps} MRRS {mrrs}"
    else:
        throughput = _read(rate, mps, mrrs, req_header, ecrc, a, length, lines, parts)
        model = f"pcie gen{gen} x{bus.width} read MPS {mps} MRRS {mrrs}"
    if queue_depth is not None:
        parts["queue_depth"] = queue_depth
        lines.append(f"queue depth {queue_depth}: no per-transfer host turnaround is modelled for"
                     " PCIe (descriptors are queued ahead of the data)")
    if transfers is not None and length is not None:
        device = _device_window(throughput, direction, mps, length, transfers, a, lines)
        parts.update(transfers=transfers, device_ceiling=device)
    return Ceiling(throughput, "\n".join(lines), parts, direction, model)


def _device_window(throughput: float, direction: str, mps: int, length: int, transfers: int,
                   a: PcieAssumptions, lines: list[str]) -> float | None:
    """The most the device's window reads in a run of ``transfers`` transfers.

    Reads are timed from the first request to the last completion's last beat, which holds
    every completion's time on the lane: the link figure bounds them. Writes are timed from the
    first TLP's hand-over to the hard IP to the last one's: the last ``tx_buffer_tlps`` TLPs wait
    in its buffer and the one on the wire is not finished, so the window holds the lane time of
    all but those (unknown buffer: no bound).
    """
    if direction == Direction.READ:
        lines.append(f"device window: first request to last completion, at most "
                     f"{throughput / 1e6:.1f} MB/s")
        return throughput
    if a.tx_buffer_tlps < 0:
        return None
    tlps = transfers * math.ceil(length / mps)
    early = a.tx_buffer_tlps + 1
    if tlps <= early:
        return None
    bound = throughput * tlps / (tlps - early)
    lines.append(f"device window: its last {early} of {tlps} TLPs leave it before the lane "
                 f"has sent them (hard IP buffer {a.tx_buffer_tlps}) -> at most "
                 f"{bound / 1e6:.1f} MB/s")
    return bound


def _write(rate: float, mps: int, header: int, ecrc: int, a: PcieAssumptions,
           length: int | None, lines: list[str], parts: dict[str, Any]) -> float:
    wire = FRAMING_BYTES + header + mps + ecrc
    efficiency = mps / wire
    throughput = rate * efficiency
    lines += [
        f"MWr TLP = framing {FRAMING_BYTES} + header {header} + MPS {mps}"
        f"{f' + ECRC {ecrc}' if ecrc else ''} = {wire} B -> {mps}/{wire} = {efficiency:.4f}",
        f"ACK (1 per {a.ack_every or '∞'} TLPs) and UpdateFC-P (1 per {a.updatefc_every or '∞'})"
        f" travel downstream: {_dllp_cost(a.ack_every) + _dllp_cost(a.updatefc_every):.1f}"
        " B per TLP on the other lane, none on this one",
        f"write plateau = {rate / 1e6:.1f} MB/s × {efficiency:.4f} = {throughput / 1e6:.1f} MB/s",
    ]
    parts.update(tlp_wire_bytes=wire, tlp_efficiency=efficiency, plateau=throughput)
    if length is not None:
        full, rest = divmod(length, mps)
        tlps = full + (1 if rest else 0)
        total = length + tlps * (FRAMING_BYTES + header + ecrc)
        throughput = rate * length / total
        lines.append(f"transfer {length} B = {tlps} TLPs, {total} B on the wire -> "
                     f"{throughput / 1e6:.1f} MB/s")
        parts.update(length=length, tlps=tlps, wire_bytes=total)
    return throughput


def _read_request_lanes(request: int, chunk: int, header: int, ecrc: int,
                        a: PcieAssumptions) -> tuple[int, float, float]:
    """Completions, downstream and upstream lane bytes for one read request of ``request`` B."""
    n = math.ceil(request / chunk)
    per_cpl = FRAMING_BYTES + CPL_HEADER_BYTES + ecrc
    ack, fc = _dllp_cost(a.ack_every), _dllp_cost(a.updatefc_every)
    return n, n * per_cpl + request + ack + fc, FRAMING_BYTES + header + ecrc + n * ack


def _latency_bound(a: PcieAssumptions, mrrs: int, downstream: float, rate: float) -> float:
    """Little's law: ``outstanding_reads`` requests of MRRS in flight, each taking the read
    latency plus its completions' time on the lane."""
    return a.outstanding_reads * mrrs / (a.read_latency_ns * 1e-9 + downstream / rate)


def _loopback(rate: float, mps: int, mrrs: int, header: int, ecrc: int, a: PcieAssumptions,
              lines: list[str], parts: dict[str, Any]) -> float:
    chunk = a.rcb if a.split_at_rcb else mps
    write_wire = FRAMING_BYTES + header + mps + ecrc
    n, read_down, read_up = _read_request_lanes(mrrs, chunk, header, ecrc, a)
    write_dllps = _dllp_cost(a.ack_every) + _dllp_cost(a.updatefc_every)
    up = write_wire / mps + read_up / mrrs
    down = read_down / mrrs + write_dllps / mps
    throughput = rate / max(up, down)
    lines += [
        "loopback: every byte is read (downstream completions) and written back (upstream MWr)",
        f"upstream per byte = MWr {write_wire}/{mps} + MRd and ACKs {read_up:.1f}/{mrrs}"
        f" = {up:.4f}",
        f"downstream per byte = completions {read_down:.1f}/{mrrs} + write ACK/UpdateFC"
        f" {write_dllps:.1f}/{mps} = {down:.4f}",
        f"loopback plateau = {rate / 1e6:.1f} MB/s / {max(up, down):.4f}"
        f" = {throughput / 1e6:.1f} MB/s",
    ]
    parts.update(completions_per_request=n, upstream_per_byte=up, downstream_per_byte=down,
                 plateau=throughput)
    if a.read_latency_ns > 0:
        bound = _latency_bound(a, mrrs, read_down, rate)
        lines.append(f"read latency bound = {bound / 1e6:.1f} MB/s")
        parts["latency_bound"] = bound
        throughput = min(throughput, bound)
        parts["plateau"] = throughput
    return throughput


def _read(rate: float, mps: int, mrrs: int, header: int, ecrc: int, a: PcieAssumptions,
          length: int | None, lines: list[str], parts: dict[str, Any]) -> float:
    chunk = a.rcb if a.split_at_rcb else mps
    request_wire = FRAMING_BYTES + header + ecrc
    ack, fc = _dllp_cost(a.ack_every), _dllp_cost(a.updatefc_every)
    n, down, up = _read_request_lanes(mrrs, chunk, header, ecrc, a)
    efficiency = mrrs / max(down, up)
    throughput = rate * efficiency
    split = f"RCB {a.rcb}" if a.split_at_rcb else f"MPS {mps}"
    lines += [
        f"MRd of MRRS {mrrs} B -> {n} completions of ≤{chunk} B (split at {split})",
        f"downstream = {n} × (framing {FRAMING_BYTES} + header {CPL_HEADER_BYTES}"
        f"{f' + ECRC {ecrc}' if ecrc else ''}) + {mrrs} + ACK {ack:.1f} + UpdateFC-NP {fc:.1f}"
        f" = {down:.1f} B",
        f"upstream = MRd {request_wire} + {n} × ACK {ack:.1f} = {up:.1f} B",
        f"read plateau = {rate / 1e6:.1f} MB/s × {mrrs}/{max(down, up):.1f}"
        f" = {throughput / 1e6:.1f} MB/s",
    ]
    parts.update(completions_per_request=n, completion_bytes=chunk, downstream_bytes=down,
                 upstream_bytes=up, tlp_efficiency=efficiency, plateau=throughput)
    if a.read_latency_ns > 0:
        # With this many requests in flight the latency, not the lane, may bind.
        bound = _latency_bound(a, mrrs, down, rate)
        lines.append(f"latency bound = {a.outstanding_reads} × {mrrs} B / "
                     f"({a.read_latency_ns:g} ns + {down / rate * 1e9:.0f} ns)"
                     f" = {bound / 1e6:.1f} MB/s")
        parts["latency_bound"] = bound
        if bound < throughput:
            throughput = bound
            parts["plateau"] = bound
    if length is not None:
        requests, down_total = 0, 0.0
        for offset in range(0, length, mrrs):
            requests += 1
            down_total += _read_request_lanes(min(mrrs, length - offset), chunk, header, ecrc, a)[1]
        # The host's descriptor writes for the transfer share the downstream lane.
        mmio = a.descriptor_writes * tlp_wire_bytes(4, header=12, ecrc=a.ecrc)
        down_total += mmio
        throughput = min(throughput, rate * length / down_total)
        lines.append(f"transfer {length} B = {requests} requests + {a.descriptor_writes} "
                     f"descriptor writes ({mmio} B), {down_total:.0f} B downstream"
                     f" -> {throughput / 1e6:.1f} MB/s")
        parts.update(length=length, requests=requests, wire_bytes=down_total)
    return throughput
