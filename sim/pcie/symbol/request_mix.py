"""A root complex's seeded mix of requests to the soft endpoint, each answer checked.

:class:`RequestMix` keeps a few non-posted requests outstanding on a
:class:`~.partner_transmitter.ReplayingDataLink` — configuration writes and reads of the
registers a host may scribble on (Cache Line Size, MSI address and data), and memory reads
outside BAR0 — and sends memory writes into BAR0 among them. It checks every TLP the endpoint
sends back: a completion for an outstanding tag, Successful for a configuration request with
the register's value as of that request (requests are carried out in the order sent, each once,
whatever the link did to them), Unsupported Request for the stray read; and it keeps the
writes so a test can compare them byte for byte with what reached the application.
"""

from __future__ import annotations

import random

from busprobe.protocol import pcie
from busprobe.protocol import pcie_config as cfg
from cocotbext.pcie.core.tlp import CplStatus, Tlp, TlpType

from .partner_transmitter import ReplayingDataLink
from .requests import config_read, config_write, memory_read, memory_write

__all__ = ["RequestMix", "SCRATCH_REGISTERS"]

#: Configuration dwords with writable bits and no effect on the link or the router.
SCRATCH_REGISTERS = (cfg.CACHE_LINE_SIZE, cfg.MSI_OFFSET + cfg.MSI_ADDRESS_LO,
                     cfg.MSI_OFFSET + cfg.MSI_ADDRESS_HI, cfg.MSI_OFFSET + cfg.MSI_DATA)
#: Where the test puts BAR0 (32-bit, non-prefetchable).
BAR0_BASE = 0xF000_0000


class RequestMix:
    """Seeded requests over ``dll`` and the checks of their answers.

    Attributes
    ----------
    writes: the MWr TLPs sent into BAR0 (bytes), in order.
    completed: requests answered, by kind (``config_write``, ``config_read``, ``ur_read``).

    Parameters
    ----------
    dll: the root port's data link layer (it numbers, sends and replays).
    seed: the mix's seed.
    window: non-posted requests outstanding at most (the endpoint's configuration space
        queues four completions).
    """

    def __init__(self, dll: ReplayingDataLink, *, seed: int, window: int = 4) -> None:
        self.dll = dll
        self.window = window
        self.writes: list[bytes] = []
        self.completed: dict[str, int] = {"config_write": 0, "config_read": 0, "ur_read": 0}
        self._rng = random.Random(seed)
        self._shadow = {offset: cfg.CONFIG_SPACE[offset].reset for offset in SCRATCH_REGISTERS}
        self._outstanding: dict[int, tuple[str, int | None]] = {}
        self._sent_at: dict[int, int] = {}
        self._sent_seq: dict[int, int] = {}
        self.now = 0  # symbol times, for :meth:`oldest`; the test keeps it current
        self._tags = iter(range(1 << 30))
        self._seen = 0
        self._queued = 0

    @property
    def outstanding(self) -> int:
        return len(self._outstanding)

    def configure(self) -> None:
        """BAR0 at :data:`BAR0_BASE` and Memory Space on (two configuration writes)."""
        self._config_write(cfg.BAR0, BAR0_BASE)
        self._config_write(cfg.COMMAND, cfg.COMMAND_MEMORY_SPACE)

    def issue(self, *, writes_in_flight: int) -> None:
        """Fill the window with seeded requests; a BAR0 write at random among them while
        fewer than ``window`` of the writes sent have reached the application."""
        rng = self._rng
        while self.outstanding < self.window:
            if writes_in_flight < self.window and rng.random() < 0.3:
                self._memory_write()
                writes_in_flight += 1
                continue
            offset = rng.choice(SCRATCH_REGISTERS)
            choice = rng.random()
            if choice < 0.4:
                self._config_write(offset, rng.getrandbits(32))
            elif choice < 0.85:
                self._send(config_read(offset, tag=self._tag()), "config_read",
                           self._shadow[offset])
            else:  # below BAR0, where nothing is mapped
                self._send(memory_read(BAR0_BASE - 4 * rng.randrange(1, 1 << 10),
                                       tag=self._tag()), "ur_read", None)

    def check_answers(self, received: list[tuple[int, bytes]]) -> None:
        """Check every TLP the endpoint sent since the last call (``received``: the root port's
        kept TLPs, each once and in order)."""
        for _, raw in received[self._seen:]:
            self._check(Tlp.unpack(raw))
        self._seen = len(received)

    # Requests. --------------------------------------------------------------------------------
    def _tag(self) -> int:
        while True:
            tag = next(self._tags) & 0xFF
            if tag not in self._outstanding:
                return tag

    def oldest(self) -> tuple[int, str, int, int] | None:
        """The longest-outstanding request: its age in symbol times, kind, tag and the
        position it was queued at among the root port's TLPs."""
        if not self._outstanding:
            return None
        tag = min(self._sent_at, key=self._sent_at.__getitem__)
        return self.now - self._sent_at[tag], self._outstanding[tag][0], tag, self._sent_seq[tag]

    def _send(self, tlp: Tlp, kind: str, expected: int | None) -> None:
        self._outstanding[tlp.tag] = (kind, expected)
        self._sent_at[tlp.tag] = self.now
        self._sent_seq[tlp.tag] = self._queued
        self._queue(bytes(tlp.pack()))

    def _queue(self, tlp: bytes) -> None:
        self._queued += 1
        self.dll.send(tlp)

    def _config_write(self, offset: int, value: int) -> None:
        writable = cfg.CONFIG_SPACE[offset].writable
        if offset in self._shadow:
            self._shadow[offset] = value & writable | self._shadow[offset] & ~writable
        self._send(config_write(offset, value, tag=self._tag()), "config_write", None)

    def _memory_write(self) -> None:
        rng = self._rng
        length = 4 * rng.randrange(1, 17)
        offset = 4 * rng.randrange((pcie.BAR0_SIZE - length) // 4)
        tlp = bytes(memory_write(BAR0_BASE + offset, rng.randbytes(length)).pack())
        self.writes.append(tlp)
        self._queue(tlp)

    # Answers. ---------------------------------------------------------------------------------
    def _check(self, tlp: Tlp) -> None:
        assert tlp.fmt_type in (TlpType.CPL, TlpType.CPL_DATA), f"not a completion: {tlp}"
        assert tlp.tag in self._outstanding, f"a completion for no request outstanding: {tlp}"
        kind, expected = self._outstanding.pop(tlp.tag)
        del self._sent_at[tlp.tag], self._sent_seq[tlp.tag]
        if kind == "ur_read":
            assert tlp.status == CplStatus.UR and tlp.fmt_type == TlpType.CPL, tlp
        else:
            assert tlp.status == CplStatus.SC, (kind, tlp)
        if kind == "config_read":
            value = int.from_bytes(tlp.get_data(), "little")
            assert value == expected, f"config read got {value:#x}, expected {expected:#x}"
        self.completed[kind] += 1
