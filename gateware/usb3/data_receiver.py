"""LUNA's data packet receiver, giving one CRC-32 verdict per data packet: the work-around for
its receiver wedging on a zero-length data packet.

Upstream bug (luna-usb 0.2.3, ``usb3/link/data.py``, ``DataPacketReceiver``; no upstream issue
names it): in its ``CHECK_CRC32`` state the transition back to ``WAIT_FOR_HPSTART`` is indented
under the ``Else`` of the CRC compare, so after a *good* payload the receiver stays in
``CHECK_CRC32`` and compares again every cycle. After a payload of one byte or more the next
word (the DPP's end framing) mismatches, so each good packet is followed by one spurious
``packet_bad`` a cycle later (busprobe's endpoints ignore a verdict for no packet of theirs).
After a zero-length payload the compared word is a constant 0 (no byte of the CRC is in the
"previous word", and the empty payload's CRC-32 is 0), so it matches forever: ``packet_good``
every cycle, and no data packet is ever received again. Found on 2026-12-05 by a host priming a
stream pipe with a zero-length data packet: behind it busprobe's OUT endpoint (even the probe's,
without streams) answered the endless verdicts with ACK TPs asking for a retry, 7 cycles apart,
until the host's control transfers timed out.

Here the receiver leaves ``CHECK_CRC32`` with its verdict, whichever it is: one verdict per
packet, and a zero-length packet is taken like any other. Nothing else of the receiver changes.
"""

from luna.gateware.usb.usb3.link.data import DataPacketReceiver

__all__ = ["OneVerdictDataPacketReceiver"]


class OneVerdictDataPacketReceiver(DataPacketReceiver):
    """LUNA's ``DataPacketReceiver`` that goes back to waiting for a header with its CRC-32
    verdict, good or bad (attributes: LUNA's)."""

    @classmethod
    def adopt(cls, receiver):
        """Turn LUNA's ``receiver`` (built by its link layer, not elaborated yet) into this
        one; returns it. The one place busprobe replaces it (:class:`.core.BurstLinkLayer`)."""
        receiver.__class__ = cls
        return receiver

    def elaborate(self, platform):
        m = super().elaborate(platform)
        # The FSM LUNA's elaborate built (Amaranth keeps it by name); this assignment comes
        # after the FSM's own, so it wins. CHECK_CRC32 gives a verdict in every cycle it is in
        # (good or bad, from one compare), so it lasts one cycle; the compare stays out of the
        # state's next-state logic (timing on ECPIX-5).
        fsm = m._generated["fsm"]
        with m.If(fsm.state == fsm.encoding["CHECK_CRC32"]):
            m.d.ss += fsm.state.eq(fsm.encoding["WAIT_FOR_HPSTART"])
        return m
