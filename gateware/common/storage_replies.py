"""The null disk's fixed SCSI answers, laid out in its telemetry snapshot RAM.

As :mod:`.control_replies` does for EP0: the storage telemetry's snapshot RAM (word 0: the
telemetry VPD page's header, then :data:`~busprobe.protocol.scsi.STORAGE_TELEMETRY`) goes on
with every constant answer, each starting on a word, so the SCSI engine streams every data-in
phase but READ's (the telemetry page included) from one read port. The capacity is an
elaboration parameter: READ CAPACITY's answers are constants too.
"""

from __future__ import annotations

from busprobe.protocol import scsi, scsi_mode
from busprobe.protocol.storage import DEFAULT_CAPACITY_BLOCKS

from .words import Reply, little_endian_words

__all__ = ["StorageReplies"]


class StorageReplies:
    """The constant answers of the SCSI engine and the snapshot RAM words that hold them.

    Attributes
    ----------
    telemetry: Reply
        The telemetry VPD page: its header (word 0) and the counters after it.
    inquiry, capacity_10, capacity_16, report_luns: Reply
    vpd: dict[int, Reply]
        EVPD pages but the telemetry's, by page code.
    mode_sense: dict[tuple[bool, int, PageControl], Reply]
        MODE SENSE (10) (true) or (6) data by page code and page control, for every page and
        control of :mod:`~busprobe.protocol.scsi_mode` that has an answer (equal answers
        share their words).
    sense: list[Reply]
        Sense data per condition of :data:`~busprobe.protocol.scsi.SENSE_CONDITIONS`.
    words: list[int]
        The whole snapshot RAM's initial words (counters 0).
    longest: int
        Bytes of the longest answer.

    Parameters
    ----------
    capacity_blocks: int
        Blocks the disk has (at most 2**32: the gateware's LBAs are 32 bits).
    """

    def __init__(self, capacity_blocks: int = DEFAULT_CAPACITY_BLOCKS):
        if not 1 <= capacity_blocks <= 1 << 32:
            raise ValueError(f"capacity {capacity_blocks} blocks is not 1..2**32")
        self._placed: dict[bytes, Reply] = {}
        header = scsi.vpd_page(scsi.VPD_TELEMETRY)
        self.words = little_endian_words(header) + [0] * scsi.STORAGE_TELEMETRY_WORDS
        self.telemetry = Reply(0, 4 + 4 * scsi.STORAGE_TELEMETRY_WORDS)
        self.inquiry = self._add(scsi.inquiry_data())
        self.vpd = {page: self._add(scsi.vpd_page(page, capacity_blocks))
                    for page in scsi.VPD_PAGES if page != scsi.VPD_TELEMETRY}
        self.capacity_10 = self._add(scsi.read_capacity_10(capacity_blocks))
        self.capacity_16 = self._add(scsi.read_capacity_16(capacity_blocks))
        self.mode_sense = {
            (ten, page, control): self._add(scsi_mode.mode_sense(page, control=control, ten=ten))
            for ten in (False, True) for page in scsi_mode.MODE_SENSE_PAGES
            for control in scsi_mode.MODE_SENSE_CONTROLS}
        self.report_luns = self._add(scsi.report_luns())
        self.sense = [self._add(scsi.sense_data(asc)) for asc in scsi.SENSE_CONDITIONS]
        # The engine finds sense block k at 5 words per block (scsi_engine.py).
        assert all(r.word == self.sense[0].word + 5 * k for k, r in enumerate(self.sense))
        self.longest = max(r.length for r in (self.telemetry, self.inquiry, self.capacity_16,
                                              *self.vpd.values(), *self.mode_sense.values()))

    @property
    def depth(self) -> int:
        return len(self.words)

    def _add(self, raw: bytes) -> Reply:
        if raw in self._placed:
            return self._placed[raw]
        reply = self._placed[raw] = Reply(len(self.words), len(raw))
        self.words += little_endian_words(raw)
        return reply
