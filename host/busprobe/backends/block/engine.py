"""The block sweep's I/O engine: ``queue_depth`` threads, each one I/O in flight, O_DIRECT.

Why an engine of our own and not fio (docs/DESIGN.md §5.4): the null disk checks every byte it
is written against the LBA pattern, and the sweep must check every byte it reads. fio writes
its own buffers (random, a fixed pattern, or verify headers) and checks reads only against what
it wrote itself, so its writes would count as mismatches on the disk and its reads could not be
checked at all. Each slot here writes the pattern of the LBAs it writes and checks each read
against the pattern of the LBAs it read (:mod:`busprobe.protocol.storage`).

Each slot is a thread calling ``preadv``/``pwritev`` on the device opened with O_DIRECT (no
page cache: every I/O reaches the driver as a command) into its own page-aligned buffer; the
call releases the GIL, so ``queue_depth`` commands are in the kernel at once, which is what the
block layer's queue depth means. A slot works through a region of the disk of its own,
sequentially, so two I/Os in flight are never adjacent and the block layer has nothing to merge:
each I/O is the commands its length splits into at ``max_sectors_kb``, as the model assumes.
The check runs in the slot after its I/O completes, while the other slots' I/Os are in flight
(numpy releases the GIL too); at queue depth 1 it adds to the gap between commands, at most
~0.25 ms per 120 KiB here (~8 % of a USB 2.0 command's time: the figure is a lower bound).
"""

from __future__ import annotations

import mmap
import os
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from ...protocol.names import Direction
from ...protocol.storage import BLOCK_SIZE, lba_words

__all__ = ["BlockRun", "run_block_io", "slot_regions"]


@dataclass
class BlockRun:
    """One run of I/Os.

    Attributes
    ----------
    bytes : int
        Bytes moved by the I/Os that completed whole.
    ios : int
        I/Os that completed whole.
    start, end : float
        ``time.perf_counter()`` before the first I/O and after the last completion.
    latencies : list of float
        Seconds from each I/O's call to its return.
    mismatched_words : int
        32-bit words read that the LBA pattern says otherwise.
    first_error_offset : int or None
        Byte offset on the disk of the first mismatch.
    errors : list of str
        One line per failed or short I/O (the run stops at the first in each slot).
    """

    bytes: int = 0
    ios: int = 0
    start: float = 0.0
    end: float = 0.0
    latencies: list[float] = field(default_factory=list)
    mismatched_words: int = 0
    first_error_offset: int | None = None
    errors: list[str] = field(default_factory=list)
    error_numbers: list[int] = field(default_factory=list)


def slot_regions(blocks: int, length: int, queue_depth: int) -> list[tuple[int, int]]:
    """``(first_lba, ios)``: the part of a ``blocks``-block disk each slot cycles through, in
    whole I/Os of ``length`` bytes; the slots' regions do not touch."""
    per_io = length // BLOCK_SIZE
    ios = blocks // per_io // queue_depth
    if ios < 1:
        raise ValueError(f"a {blocks}-block disk has no room for {queue_depth} regions of "
                         f"{length} B")
    return [(slot * ios * per_io, ios) for slot in range(queue_depth)]


class _Slot(threading.Thread):
    def __init__(self, fd: int, direction: str, length: int, count: int,
                 region: tuple[int, int], first: int, run: BlockRun, lock: threading.Lock,
                 go: threading.Barrier) -> None:
        super().__init__(daemon=True)
        self.fd, self.direction, self.length, self.count = fd, direction, length, count
        self.region, self.first = region, first
        self.run_, self.lock, self.go = run, lock, go
        self.buffer = mmap.mmap(-1, length)  # page-aligned, as O_DIRECT needs
        self.words = np.frombuffer(self.buffer, dtype="<u4")

    def run(self) -> None:
        per_io = self.length // BLOCK_SIZE
        base, ios = self.region
        latencies = []
        moved = done = 0
        try:
            self.go.wait()
            for index in range(self.first, self.first + self.count):
                lba = base + (index % ios) * per_io
                if self.direction == Direction.WRITE:
                    self.words[:] = lba_words(lba, per_io)
                t0 = time.perf_counter()
                if self.direction == Direction.WRITE:
                    got = os.pwritev(self.fd, [self.buffer], lba * BLOCK_SIZE)
                else:
                    got = os.preadv(self.fd, [self.buffer], lba * BLOCK_SIZE)
                latencies.append(time.perf_counter() - t0)
                if got != self.length:
                    self._fail(f"{self.direction} of {self.length} B at LBA {lba} moved {got} B")
                    break
                if self.direction == Direction.READ:
                    self._check(lba, per_io)
                moved += got
                done += 1
        except OSError as exc:
            self._fail(f"{self.direction} of {self.length} B failed: "
                       f"{exc.strerror or exc}", exc.errno or 0)
        except threading.BrokenBarrierError:
            pass
        finally:
            with self.lock:
                self.run_.bytes += moved
                self.run_.ios += done
                self.run_.latencies.extend(latencies)
                self.run_.end = max(self.run_.end, time.perf_counter())
            del self.words  # the array exports the buffer: released first, or close fails
            self.buffer.close()

    def _check(self, lba: int, blocks: int) -> None:
        bad = np.nonzero(self.words != lba_words(lba, blocks))[0]
        if bad.size:
            with self.lock:
                self.run_.mismatched_words += int(bad.size)
                offset = lba * BLOCK_SIZE + int(bad[0]) * 4
                first = self.run_.first_error_offset
                self.run_.first_error_offset = offset if first is None else min(first, offset)

    def _fail(self, line: str, number: int = 0) -> None:
        with self.lock:
            self.run_.errors.append(line)
            self.run_.error_numbers.append(number)


def run_block_io(fd: int, direction: str, length: int, count: int, queue_depth: int,
                 blocks: int, *, cursor: int = 0) -> BlockRun:
    """``count`` I/Os of ``length`` bytes (a multiple of the block size), ``queue_depth`` in
    flight, on the disk open as ``fd`` (``blocks`` blocks long).

    ``direction`` ``read`` checks every block read against the LBA pattern; ``write`` writes
    it. I/O ``i`` goes to slot ``i mod queue_depth``; ``cursor`` is where in its region each
    slot resumes (the caller advances it by the I/Os a slot made, so repeats move on through
    the disk instead of re-reading what the device may have cached).
    """
    if direction not in (Direction.READ, Direction.WRITE):
        raise ValueError(f"direction '{direction}' is not read or write")
    if length % BLOCK_SIZE or length <= 0:
        raise ValueError(f"length {length} B is not a whole number of {BLOCK_SIZE}-byte blocks")
    regions = slot_regions(blocks, length, queue_depth)
    run, lock = BlockRun(), threading.Lock()
    go = threading.Barrier(queue_depth + 1)
    slots = [_Slot(fd, direction, length, count // queue_depth + (s < count % queue_depth),
                   regions[s], cursor, run, lock, go) for s in range(queue_depth)]
    for slot in slots:
        slot.start()
    run.start = time.perf_counter()
    go.wait()
    for slot in slots:
        slot.join()
    return run
