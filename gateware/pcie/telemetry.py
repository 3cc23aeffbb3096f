"""TLP-level telemetry taken at the LitePCIe PHY streams (Migen).

It watches the two PHY streams the core exchanges with any LitePCIe PHY (7-series hard IP on the
board, the simulated PHY in simulation): ``phy.sink`` (core to link) and ``phy.source`` (link to
core). Beats use the PHY's 64-bit format: header DW0 in ``dat[0:32]`` as the spec's big-endian
DW value, DW1 in ``dat[32:64]``, DW2 in the next beat. ``first`` is not trusted (the 7-series
64-bit PHY never sets it on RX); a packet starts on the beat after ``last``.

What is counted is defined, with descriptions, by :data:`busprobe.protocol.pcie.TELEMETRY`.
"""

from __future__ import annotations

from migen import Array, If, Module, Signal

from .tlp_beats import CPLD, MRD32, MRD64, MWR32, MWR64, PacketTracker

__all__ = ["TLPTelemetry", "GuardCounters", "GUARD_COUNTERS"]


class TLPTelemetry(Module):
    """Counters describing what the link did, for the host to explain a throughput figure.

    Attributes
    ----------
    clear : Signal(), input
        Zero every counter (minimum latency goes to all ones).
    cycles : Signal(32), output
        Free-running core clock counter; ``*_first_cycle``/``*_last_cycle`` are samples of it.
    max_payload_size, max_request_size : Signal(16), input
        Negotiated sizes as the core uses them (reported as they are).
    Other attributes are the counters named in :data:`busprobe.protocol.pcie.TELEMETRY`.

    Parameters
    ----------
    tx, rx : stream.Endpoint(phy_layout)
        The PHY's ``sink`` (core to link) and ``source`` (link to core); only observed.
    tag_bits : int
        Width of the read tags the core uses (LitePCIe numbers them from 0).
    """

    def __init__(self, tx, rx, tag_bits=3):
        self.clear = Signal()
        self.cycles = Signal(32)
        self.max_payload_size = Signal(16)
        self.max_request_size = Signal(16)
        counters = [
            "wr_first_cycle", "wr_last_cycle", "wr_tlps", "wr_bytes",
            "rd_first_cycle", "rd_last_cycle", "rd_requests", "rd_request_bytes",
            "rd_completions", "rd_bytes",
            "tx_tlps", "rx_tlps", "tx_stall_cycles", "rx_stall_cycles",
            "rd_latency_min", "rd_latency_max", "rd_latency_sum", "rd_latency_count",
            "rd_outstanding_max",
        ]
        for name in counters:
            setattr(self, name, Signal(32, name=name))
        self.rd_latency_min.reset = 0xFFFF_FFFF

        self.submodules.txp = txp = PacketTracker(tx)
        self.submodules.rxp = rxp = PacketTracker(rx)
        self.sync += self.cycles.eq(self.cycles + 1)

        # TX: memory writes and read requests leave the core. ----------------------------------
        tx_kind = tx.dat[24:32]
        tx_len = tx.dat[0:10]
        tx_is_mwr = txp.start & ((tx_kind == MWR32) | (tx_kind == MWR64))
        tx_is_mrd = txp.start & ((tx_kind == MRD32) | (tx_kind == MRD64))
        tx_tag = tx.dat[40:40 + tag_bits]
        in_mwr = Signal()  # the packet in flight on TX is a memory write
        wr_seen = Signal()
        rd_seen = Signal()

        # RX: completions with data come back. --------------------------------------------------
        rx_kind = rx.dat[24:32]
        rx_len = rx.dat[0:10]
        rx_byte_count = rx.dat[32:44]
        cpl_len = Signal(10)
        cpl_final = Signal()  # this completion ends its request
        in_cpld = Signal()
        rx_tag = rx.dat[8:8 + tag_bits]  # DW2 of a completion, second beat

        ntags = 1 << tag_bits
        start_cycle = Array(Signal(32, name=f"rd_start{i}") for i in range(ntags))
        pending = Array(Signal(name=f"rd_pending{i}") for i in range(ntags))
        outstanding = Signal(16)
        rd_done = Signal()
        latency = Signal(32)
        first_cpl = Signal()
        self.comb += [
            latency.eq(self.cycles - start_cycle[rx_tag]),
            first_cpl.eq(rxp.second & in_cpld & pending[rx_tag]),
            rd_done.eq(rxp.second & in_cpld & cpl_final),
        ]

        self.sync += If(self.clear,
            *[getattr(self, name).eq(getattr(self, name).reset) for name in counters],
            wr_seen.eq(0), rd_seen.eq(0), outstanding.eq(0),
            *[pending[i].eq(0) for i in range(ntags)],
        ).Else(
            # Stalls: the link (or the core) was not ready while the other side had data.
            If(tx.valid & ~tx.ready, self.tx_stall_cycles.eq(self.tx_stall_cycles + 1)),
            If(rx.valid & ~rx.ready, self.rx_stall_cycles.eq(self.rx_stall_cycles + 1)),
            If(txp.start, self.tx_tlps.eq(self.tx_tlps + 1)),
            If(rxp.start, self.rx_tlps.eq(self.rx_tlps + 1)),
            # Writes.
            If(txp.start, in_mwr.eq(tx_is_mwr)),
            If(tx_is_mwr,
                self.wr_tlps.eq(self.wr_tlps + 1),
                self.wr_bytes.eq(self.wr_bytes + (tx_len << 2)),
                If(~wr_seen, wr_seen.eq(1), self.wr_first_cycle.eq(self.cycles)),
            ),
            If(txp.fire & tx.last & (in_mwr | tx_is_mwr), self.wr_last_cycle.eq(self.cycles)),
            # Read requests.
            If(tx_is_mrd,
                self.rd_requests.eq(self.rd_requests + 1),
                self.rd_request_bytes.eq(self.rd_request_bytes + (tx_len << 2)),
                start_cycle[tx_tag].eq(self.cycles),
                pending[tx_tag].eq(1),
                If(~rd_seen, rd_seen.eq(1), self.rd_first_cycle.eq(self.cycles)),
            ),
            outstanding.eq(outstanding + tx_is_mrd - rd_done),
            If(outstanding > self.rd_outstanding_max, self.rd_outstanding_max.eq(outstanding)),
            # Completions.
            If(rxp.start,
                in_cpld.eq(rx_kind == CPLD),
                cpl_len.eq(rx_len),
                cpl_final.eq(rx_byte_count <= (rx_len << 2)),
                If(rx_kind == CPLD,
                    self.rd_completions.eq(self.rd_completions + 1),
                    self.rd_bytes.eq(self.rd_bytes + (rx_len << 2)),
                ),
            ),
            If(rxp.fire & rx.last & (in_cpld | (rxp.start & (rx_kind == CPLD))),
                self.rd_last_cycle.eq(self.cycles),
            ),
            If(first_cpl,
                pending[rx_tag].eq(0),
                self.rd_latency_count.eq(self.rd_latency_count + 1),
                self.rd_latency_sum.eq(self.rd_latency_sum + latency),
                If(latency < self.rd_latency_min, self.rd_latency_min.eq(latency)),
                If(latency > self.rd_latency_max, self.rd_latency_max.eq(latency)),
            ),
        )


class GuardCounters(Module):
    """What the receive guard dropped, by class, as the telemetry counters the host reads.

    Attributes
    ----------
    clear : Signal(), input
        Zero every counter (``busprobe_telemetry_clear``).
    Other attributes are 32-bit counters named as in :data:`busprobe.protocol.pcie.TELEMETRY`,
    one per entry of :data:`GUARD_COUNTERS`.

    Parameters
    ----------
    guard : RxTlpGuard
        Its one-cycle event strobes are counted.
    """

    def __init__(self, guard):
        self.clear = Signal()
        for event, name in GUARD_COUNTERS:
            counter = Signal(32, name=name)
            setattr(self, name, counter)
            self.sync += If(self.clear, counter.eq(0)).Elif(getattr(guard, event),
                                                            counter.eq(counter + 1))


#: Receive-guard event (:data:`busprobe.gateware.pcie.rx_guard.EVENTS`) -> telemetry counter.
GUARD_COUNTERS = (
    ("malformed", "rx_malformed"),
    ("poisoned", "rx_poisoned"),
    ("unexpected", "rd_cpl_unexpected"),
    ("status", "rd_cpl_status"),
    ("mismatch", "rd_cpl_mismatch"),
    ("timeout", "rd_cpl_timeouts"),
    ("discarded", "rd_cpl_discarded"),
)
