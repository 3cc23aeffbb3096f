"""What the core's receive guard must do with each TLP: the scoreboard of the fault tests.

:class:`GuardModel` follows the reads the core sends and classifies every packet handed to it,
by the rules the gateware documents (``gateware/pcie/rx_guard.py``, PCIe Base Spec 3.0 §2.3),
from the beats alone: the telemetry counter it must increment (``protocol.pcie.TELEMETRY``
names), or None when the packet must reach LitePCIe. It is written from the rules, not from the
Migen code, so the fuzz test compares two readings of them; the directed tests pin each rule by
hand.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from busprobe.protocol import pcie as proto
from cocotbext.pcie.core.tlp import Tlp, TlpType

from .tlp_stream import RawPacket, tlp_to_beats

__all__ = ["GuardModel", "Read", "packet_beats"]

_CPL_TYPE, _CPL_LOCKED_TYPE = 0b01010, 0b01011
_READS = {TlpType.MEM_READ, TlpType.MEM_READ_64}
_MAX_TLP_BEATS = (4 + 512 // 4 + 1 + 1) // 2
_RCB = 64


def packet_beats(item: Tlp | RawPacket) -> list[tuple[int, int]]:
    """The beats the DUT receives for ``item``."""
    return item.beats if isinstance(item, RawPacket) else tlp_to_beats(item)


@dataclass
class Read:
    """A memory read in flight, as the guard must track it."""

    remaining: int  # bytes still owed
    lower: int  # Lower Address of the next completion
    failed: bool = False


class GuardModel:
    """Reads in flight and the expected fate of each received packet.

    Parameters
    ----------
    requester_id : int
        The device's ID (completions must carry it).
    max_payload_size : int
        MPS in force, bytes.

    Attributes
    ----------
    reads : dict
        Tag -> :class:`Read`, for the tags the core uses.
    counts : Counter
        Expected telemetry counter increments so far.
    failures : int
        Reads failed so far (the core's ``RD_FAILED`` must be set when this is not 0).
    """

    def __init__(self, requester_id: int, max_payload_size: int) -> None:
        self.requester_id = requester_id
        self.max_payload_size = max_payload_size
        self.reads: dict[int, Read] = {}
        self.counts: Counter[str] = Counter()
        self.failures = 0

    def request(self, tlp: Tlp) -> None:
        """A TLP the core sent: a memory read opens its tag."""
        if tlp.fmt_type in _READS and tlp.tag < proto.READ_TAGS:
            self.reads[tlp.tag] = Read(remaining=tlp.length * 4 or 4096,
                                       lower=tlp.address & 0x7F)

    def receive(self, item: Tlp | RawPacket) -> str | None:
        """The counter ``item`` must increment when the core gets it, or None (passed on)."""
        verdict = self._classify(packet_beats(item))
        if verdict is not None:
            self.counts[verdict] += 1
        return verdict

    def expire(self) -> int:
        """Reads still owed data once the completion timeout has passed: they time out."""
        late = [read for read in self.reads.values() if not read.failed]
        for read in late:
            self._fail(read)
        self.counts["rd_cpl_timeouts"] += len(late)
        return len(late)

    def forget(self) -> None:
        """The read path was reset: no read is in flight, none has failed."""
        self.reads.clear()
        self.failures = 0

    def _fail(self, read: Read) -> None:
        read.failed = True
        self.failures += 1

    def _classify(self, beats: list[tuple[int, int]]) -> str | None:
        words = [dat & 0xFFFF_FFFF for dat, _ in beats[:1]] + [beats[0][0] >> 32]
        if len(beats) > 1:
            words.append(beats[1][0] & 0xFFFF_FFFF)
        dw0, dw1 = words[0], words[1]
        dw2 = words[2] if len(words) > 2 else 0
        fmt, kind = dw0 >> 29, (dw0 >> 24) & 0x1F
        length = dw0 & 0x3FF
        data_dws = (length or 1024) if fmt & 0b010 else 0
        expected = 3 + (fmt & 1) + data_dws + ((dw0 >> 15) & 1)
        stored = beats[:_MAX_TLP_BEATS]
        received = sum(2 if be & 0xF0 else 1 for _, be in stored)
        framing_bad = (len(beats) == 1 or len(beats) > _MAX_TLP_BEATS
                       or any(be != 0xFF for _, be in stored[:-1])
                       or stored[-1][1] not in (0xFF, 0x0F)
                       or fmt & 0b100 or received != expected
                       or data_dws * 4 > self.max_payload_size)
        tag, requester = (dw2 >> 8) & 0xFF, dw2 >> 16
        read = self.reads.get(tag)
        ours = (kind == _CPL_TYPE and len(beats) > 1 and requester == self.requester_id
                and read is not None)
        if framing_bad:
            if ours and not read.failed:
                self._fail(read)
            return "rx_malformed"
        poisoned = bool(dw0 >> 14 & 1)
        if kind not in (_CPL_TYPE, _CPL_LOCKED_TYPE):
            return "rx_poisoned" if poisoned else None
        if not ours:
            return "rd_cpl_unexpected"
        if read.failed:
            return "rd_cpl_discarded"
        status, byte_count, lower = (dw1 >> 13) & 7, (dw1 & 0xFFF) or 4096, dw2 & 0x7F
        payload = data_dws * 4
        for verdict, bad in (("rx_poisoned", poisoned), ("rd_cpl_status", status != 0),
                             ("rd_cpl_mismatch", self._mismatch(read, fmt, byte_count, lower,
                                                                payload))):
            if bad:
                self._fail(read)
                return verdict
        read.remaining -= payload
        read.lower = (read.lower + payload) & 0x7F
        if read.remaining == 0:
            del self.reads[tag]
        return None

    @staticmethod
    def _mismatch(read: Read, fmt: int, byte_count: int, lower: int, payload: int) -> bool:
        return (not fmt & 0b010 or byte_count != read.remaining or lower != read.lower
                or payload > read.remaining
                or (payload != read.remaining and (lower + payload) % _RCB != 0))
