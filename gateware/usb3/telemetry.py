"""Telemetry of the SuperSpeed device: the counters of :data:`busprobe.protocol.usb3.TELEMETRY`."""

from amaranth import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb3
from busprobe.protocol.names import Direction

__all__ = ["SuperSpeedTelemetry", "DIRECTION_EVENTS", "EVENTS"]

#: Per-direction events (strobes, with the values some carry), reported by the bulk endpoints.
DIRECTION_EVENTS = data.StructLayout({
    "dp_start": 1,        # a data packet began on the link (first cycle it moved)
    "acked": 1,           # a data packet was acknowledged (IN: retired by an ACK TP; OUT: ACKed)
    "acked_bytes": 11,    # ... with this many payload bytes
    "dps": 1,             # IN: a DP was sent (retries too); OUT: a DP for the endpoint arrived
    "retry": 1,           # IN: a DP was resent; OUT: a DP failed CRC or framing
    "sequence_error": 1,  # OUT: a DP arrived out of sequence
    "ack_tp": 1,          # IN: an ACK TP arrived; OUT: an ACK TP was sent
    "nump": 5,            # ... with this NumP
    "burst_dp": 1,        # a DP joined the current burst (IN: sent; OUT: received and good)
    "burst_length": 5,    # ... the burst's DPs so far, this one included (1 = a new burst)
    "eob": 1,             # IN: a DP was sent with End Of Burst
    "nrdy": 1,            # an NRDY TP was sent for the endpoint
    "erdy": 1,            # an ERDY TP was sent for the endpoint
    "stream_error": 1,    # a stream endpoint took a packet naming a stream it could not move
})

#: Device-wide events.
EVENTS = data.StructLayout({
    "in": DIRECTION_EVENTS,
    "out": DIRECTION_EVENTS,
    "header_credit_stall": 1,
    "itp": 1,
})


class SuperSpeedTelemetry(wiring.Component):
    """Counts what the host did, in the order and with the meaning of the protocol's table.

    Attributes
    ----------
    events: EVENTS, input
        This cycle's events.
    pattern_errors: Signal(32), input
    first_error_offset: Signal(32), input
        The OUT checker's outputs, reported as they are.
    clear: Signal(), input
        Strobe: zero every counter (CLEAR_TELEMETRY).
    words: ArrayLayout(32, TELEMETRY_WORDS), output
        The telemetry block, in protocol order.
    """

    events: In(EVENTS)
    pattern_errors: In(32)
    first_error_offset: In(32)
    clear: In(1)
    words: Out(data.ArrayLayout(32, usb3.TELEMETRY_WORDS))

    def elaborate(self, platform):
        m = Module()
        index = usb3.TELEMETRY_INDEX
        counters = {name: Signal(32, name=name, init=usb3.TELEMETRY_INITIAL.get(name, 0))
                    for name, _ in usb3.TELEMETRY if name not in ("magic", "version",
                                                                  "pattern_errors",
                                                                  "first_error_offset")}
        m.d.comb += [
            self.words[index["magic"]].eq(usb3.MAGIC),
            self.words[index["version"]].eq(usb3.PROTOCOL_VERSION),
            self.words[index["pattern_errors"]].eq(self.pattern_errors),
            self.words[index["first_error_offset"]].eq(self.first_error_offset),
        ]
        m.d.comb += [self.words[index[name]].eq(counter) for name, counter in counters.items()]

        cycle = Signal(32)
        m.d.ss += cycle.eq(cycle + 1)
        # Events are registered once: the endpoints' decisions do not share a cycle with the
        # counters' carry chains (a count lands one cycle later, the cycle stamps too).
        events = Signal(EVENTS)
        m.d.ss += events.eq(self.events)
        updates = []  # (counter name, condition, new value)

        def count(name, condition, amount=1):
            updates.append((name, condition, counters[name] + amount))

        def maximum(name, condition, value):
            updates.append((name, condition & (value > counters[name]), value))

        moved_this_interval = Signal()
        for direction in (Direction.IN, Direction.OUT):
            event = events[direction]
            count(f"{direction}_bytes", event.acked, event.acked_bytes)
            count(f"{direction}_packets", event.acked)
            count(f"{direction}_short", event.acked & (event.acked_bytes != 0)
                  & (event.acked_bytes < usb3.MAX_PACKET_SIZE))
            count(f"{direction}_zlps", event.acked & (event.acked_bytes == 0))
            # Counted as they start and grow, so a burst that has not ended yet is in the block.
            count(f"{direction}_bursts", event.burst_dp & (event.burst_length == 1))
            maximum(f"{direction}_burst_max", event.burst_dp, event.burst_length)
            count(f"{direction}_nrdys", event.nrdy)
            count(f"{direction}_erdys", event.erdy)
            count(f"{direction}_ack_tps", event.ack_tp)
            # The first packet's start, and the latest acknowledgement, in ss cycles.
            first = counters[f"{direction}_first_cycle"]
            started = Signal(name=f"{direction}_started")
            with m.If(event.dp_start & ~started):
                m.d.ss += [first.eq(cycle), started.eq(1)]
            with m.If(self.clear):
                m.d.ss += started.eq(0)
            updates.append((f"{direction}_last_cycle", event.acked, cycle))
        inn, out = events["in"], events["out"]
        m.d.comb += moved_this_interval.eq(inn.acked | out.acked)
        count("in_dps_sent", inn.dps)
        count("in_retries", inn.retry)
        count("in_nump_total", inn.ack_tp, inn.nump)
        maximum("in_nump_max", inn.ack_tp, inn.nump)
        count("in_eobs", inn.eob)
        for direction in ("in", "out"):
            count(f"{direction}_stream_errors", events[direction].stream_error)
        count("out_dps_received", out.dps)
        count("out_bad_dps", out.retry)
        count("out_sequence_errors", out.sequence_error)
        count("out_nump_zero", out.ack_tp & (out.nump == 0))
        updates.append(("out_nump_min", out.ack_tp & (out.nump < counters["out_nump_min"]),
                        out.nump))
        count("header_credit_stalls", events.header_credit_stall)
        count("itps", events.itp)

        # Bus intervals: an ITP closes one. The window rows follow USB 2.0's microframe window.
        interval_had_data = Signal()
        with m.If(events.itp):
            m.d.ss += interval_had_data.eq(0)
        with m.Elif(moved_this_interval):
            m.d.ss += interval_had_data.eq(1)
        count("data_intervals", events.itp & interval_had_data)
        for direction in (Direction.IN, Direction.OUT):
            event = events[direction]
            had = Signal(name=f"{direction}_interval_had_data")
            started = Signal(name=f"{direction}_window_started")
            with m.If(events.itp):
                m.d.ss += had.eq(0)
            with m.Elif(event.acked):
                m.d.ss += had.eq(1)
            # At the end of each interval with data: the first sets the window's start; every
            # later one moves the end to the previous such interval (the last is partly idle).
            closing = events.itp & had
            now_bytes = counters[f"{direction}_bytes"]
            now_itps = counters["itps"] + 1
            previous_bytes = Signal(32, name=f"{direction}_previous_close_bytes")
            previous_itps = Signal(32, name=f"{direction}_previous_close_interval")
            with m.If(closing):
                m.d.ss += [previous_bytes.eq(now_bytes), previous_itps.eq(now_itps),
                           started.eq(1)]
            with m.If(self.clear):
                m.d.ss += started.eq(0)
            updates += [
                (f"{direction}_window_start_bytes", closing & ~started, now_bytes),
                (f"{direction}_window_start_interval", closing & ~started, now_itps),
                (f"{direction}_window_end_bytes", closing & started, previous_bytes),
                (f"{direction}_window_end_interval", closing & started, previous_itps),
            ]

        for name, condition, value in updates:
            with m.If(condition):
                m.d.ss += counters[name].eq(value)
        with m.If(self.clear):
            m.d.ss += [counter.eq(counter.init) for counter in counters.values()]
        return m
