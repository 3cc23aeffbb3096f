"""The memory reads the core has in flight, by tag, and their completion timeout (Migen).

LitePCIe's completion reorder controller (``litepcie.tlp.controller``) files every completion by
its tag and trusts the rest of the header: a completion for a tag it never used, a second one for
a finished request, or one that never comes all corrupt or wedge it. :class:`ReadRequestTracker`
keeps, next to it, what the link owes the core: it watches memory-read requests leave on the PHY
transmit stream and records, per tag, the bytes still to come and the lower address the next
completion must carry. :class:`~busprobe.gateware.pcie.rx_guard.RxTlpGuard` looks a received
completion up here and reports what it did with it (:attr:`advance`, :attr:`fail`).

Completion timeout (PCIe Base Specification 3.0, §2.8): a request not completed in time is
failed. The specification's default range is 50 µs to 50 ms (Device Control 2 value 0) and it
recommends not less than 10 ms. Here the time is ``timeout_cycles`` core cycles (a register, so a
slow simulated root can be given more), measured from the request, in quarters: a request fails
between 1 and 1.25 × ``timeout_cycles`` after it left. 0 disables the timeout.
"""

from __future__ import annotations

from migen import Array, Cat, If, Module, Signal

from .tlp_beats import FMT_4DW, MRD32, MRD64, PacketTracker

__all__ = ["ReadRequestTracker", "AGE_LIMIT"]

#: Quarters of the timeout a request may age before it fails (ages count 4..5 quarters).
AGE_LIMIT = 5
#: Bytes of one request at most (Length field 0 = 1024 DWs).
_BYTES_BITS = 13


class ReadRequestTracker(Module):
    """Outstanding memory reads by tag.

    Attributes
    ----------
    tag : Signal(8), input
        The tag looked up (the received completion's).
    busy, failed : Signal(), output
        ``tag`` is a read in flight; it has already failed (no completion of it is used again).
        Both 0 for a tag the core does not use.
    remaining : Signal(13), output
        Bytes of ``tag``'s request not yet completed.
    next_lower_address : Signal(7), output
        Lower Address the next completion of ``tag`` must carry.
    advance : Signal(), input
        A good completion of ``tag`` carrying ``advance_bytes`` was passed on.
    advance_bytes : Signal(13), input
    fail : Signal(), input
        Fail ``tag``'s request (its data will not all arrive).
    timeout_cycles : Signal(32), input
        Completion timeout in core cycles (0: none).
    timeout : Signal(), output
        A request failed by timeout this cycle (at most one per cycle).

    Parameters
    ----------
    tx : stream.Endpoint(phy_layout(64))
        The PHY's transmit stream (core to link), only observed.
    tag_bits : int
        Width of the tags the core uses (LitePCIe numbers them from 0).
    """

    def __init__(self, tx, tag_bits=3):
        ntags = 1 << tag_bits
        self.tag = Signal(8)
        self.busy = Signal()
        self.failed = Signal()
        self.remaining = Signal(_BYTES_BITS)
        self.next_lower_address = Signal(7)
        self.advance = Signal()
        self.advance_bytes = Signal(_BYTES_BITS)
        self.fail = Signal()
        self.timeout_cycles = Signal(32)
        self.timeout = Signal()

        busy = Array(Signal(name=f"read_busy{i}") for i in range(ntags))
        failed = Array(Signal(name=f"read_failed{i}") for i in range(ntags))
        remaining = Array(Signal(_BYTES_BITS, name=f"read_remaining{i}") for i in range(ntags))
        lower = Array(Signal(7, name=f"read_lower{i}") for i in range(ntags))
        age = Array(Signal(3, name=f"read_age{i}") for i in range(ntags))

        # Lookup of the received completion's tag. ------------------------------------------------
        index = Signal(tag_bits)
        in_range = Signal()
        self.comb += [
            index.eq(self.tag[:tag_bits]),
            in_range.eq(self.tag[tag_bits:] == 0),
            self.busy.eq(in_range & busy[index]),
            self.failed.eq(in_range & failed[index]),
            self.remaining.eq(remaining[index]),
            self.next_lower_address.eq(lower[index]),
        ]

        # Requests leaving the core: tag and length on the first beat, address on the second. ----
        self.submodules.txp = txp = PacketTracker(tx)
        kind = tx.dat[24:32]
        is_read = Signal()
        read_4dw = Signal()
        new_tag = Signal(8)
        new_bytes = Signal(_BYTES_BITS)
        allocate = Signal()
        self.comb += allocate.eq(txp.second & is_read & (new_tag[tag_bits:] == 0))
        self.sync += If(txp.start,
            is_read.eq((kind == MRD32) | (kind == MRD64)),
            read_4dw.eq(tx.dat[29:32] == FMT_4DW),
            new_tag.eq(tx.dat[40:48]),
            # Length 0 means 1024 DWs; LitePCIe reads whole DWs (first/last BE 0xF).
            new_bytes.eq(Cat(Signal(2), tx.dat[0:10], tx.dat[0:10] == 0)),
        )
        new_lower = Signal(7)
        self.comb += If(read_4dw, new_lower.eq(tx.dat[32:39])).Else(new_lower.eq(tx.dat[0:7]))

        # Timeout: a tick every quarter of the timeout ages every live request. --------------------
        quarter = Signal(30)
        tick = Signal()
        self.sync += [
            tick.eq(0),
            If(self.timeout_cycles == 0,
                quarter.eq(0),
            ).Elif(quarter == 0,
                quarter.eq(self.timeout_cycles[2:] - 1),
                tick.eq(1),
            ).Else(
                quarter.eq(quarter - 1),
            ),
        ]
        # One tag is examined per cycle, so at most one timeout is reported at a time.
        scan = Signal(tag_bits)
        expired = Signal()
        self.comb += expired.eq(
            busy[scan] & ~failed[scan] & (age[scan] >= AGE_LIMIT)
            # A completion or a new request for that tag this very cycle wins.
            & ~((self.advance | self.fail) & in_range & (index == scan))
            & ~(allocate & (new_tag[:tag_bits] == scan)))
        self.comb += self.timeout.eq(expired)

        self.sync += [
            scan.eq(scan + 1),
            *[If(tick & busy[i] & ~failed[i] & (age[i] != 7), age[i].eq(age[i] + 1))
              for i in range(ntags)],
            If(expired, failed[scan].eq(1)),
            If(in_range & self.fail, failed[index].eq(1)),
            If(in_range & self.advance,
                remaining[index].eq(remaining[index] - self.advance_bytes),
                lower[index].eq(lower[index] + self.advance_bytes[:7]),
                If(remaining[index] == self.advance_bytes, busy[index].eq(0)),
            ),
            # The core reuses a tag only once its request is over, so a new request wins.
            If(allocate,
                busy[new_tag[:tag_bits]].eq(1),
                failed[new_tag[:tag_bits]].eq(0),
                remaining[new_tag[:tag_bits]].eq(new_bytes),
                lower[new_tag[:tag_bits]].eq(new_lower),
                age[new_tag[:tag_bits]].eq(0),
            ),
        ]
