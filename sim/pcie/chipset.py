"""A cocotbext-pcie root complex with a chipset's latency and bandwidth ceiling.

cocotbext-pcie's :class:`~cocotbext.pcie.core.RootComplex` answers reads with zero memory latency
and absorbs writes instantly, so only the link limits a device. :class:`ChipsetRootComplex` adds
what a real root port/memory path adds:

``latency_ns``
    Time from a memory-read request reaching the root to its completions being sent.
``cap``
    Bytes per second the root moves to or from memory, shared by both directions (one token
    bucket). Reads: completions of a request leave when its bytes have been fetched at that rate.
    Writes: the posted-data flow-control credits of a write return to the device only when its
    bytes have been absorbed, so a device writing faster than ``cap`` runs out of credits and is
    held back by the link, as behind a slow chipset.
"""

from __future__ import annotations

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import Timer
from cocotbext.pcie.core import RootComplex
from cocotbext.pcie.core.tlp import TlpType

from .route_speed import DirectRouting, FastRootPort

__all__ = ["ChipsetRootComplex"]

_WRITES = {TlpType.MEM_WRITE, TlpType.MEM_WRITE_64}
_READS = {TlpType.MEM_READ, TlpType.MEM_READ_64}


class ChipsetRootComplex(DirectRouting, RootComplex):
    """Root complex whose memory has latency and a throughput cap (routing each TLP without a
    task hop, :class:`~.route_speed.DirectRouting`; its root ports route by
    :class:`~.route_speed.FastRouting`).

    Parameters
    ----------
    latency_ns : float
        Read request to completion latency added by the root (0: none).
    cap : float or None
        Memory throughput in bytes/s for both directions together (None: unlimited).
    """

    def __init__(self, *args, latency_ns: float = 0.0, cap: float | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        # make_port builds each root port from this (upstream's constructor set RootPort).
        self.default_downstream_bridge = FastRootPort
        if latency_ns < 0:
            raise ValueError(f"latency_ns must not be negative, not {latency_ns}")
        if cap is not None and cap <= 0:
            raise ValueError(f"cap must be positive bytes/s, not {cap}")
        self.latency_ns = float(latency_ns)
        self.cap = cap
        self._busy_until_ps = 0
        #: Payload bytes of memory writes received so far (DMA data and MSI messages).
        self.write_bytes = 0

    def _reserve(self, nbytes: int, earliest_ps: int) -> int:
        """Book ``nbytes`` of memory time from ``earliest_ps``; return when they are done (ps)."""
        start = max(earliest_ps, self._busy_until_ps)
        if self.cap:
            self._busy_until_ps = start + round(nbytes * 1e12 / self.cap)
            return self._busy_until_ps
        return start

    async def handle_tlp(self, tlp):
        now = round(get_sim_time("ps"))
        if tlp.fmt_type in _WRITES and self.cap:
            # Held in the chipset until its bytes are through: it lands in memory, and its
            # credits return, then (bookings are sequential, so writes stay in order).
            release, tlp.release_fc_cb = tlp.release_fc_cb, None
            done = self._reserve(tlp.length * 4, now)
            cocotb.start_soon(self._absorb_at(done, tlp, release))
            return
        if tlp.fmt_type in _WRITES:
            self.write_bytes += tlp.length * 4
        elif tlp.fmt_type in _READS and (self.cap or self.latency_ns):
            tlp.release_fc()
            cocotb.start_soon(self._delayed_read(tlp, now))
            return
        await super().handle_tlp(tlp)

    async def _absorb_at(self, when_ps: int, tlp, release) -> None:
        delay = when_ps - round(get_sim_time("ps"))
        if delay > 0:
            await Timer(delay, "ps")
        self.write_bytes += tlp.length * 4
        await super().handle_tlp(tlp)
        if release is not None:
            release()

    async def _delayed_read(self, tlp, now_ps: int) -> None:
        done = self._reserve(tlp.length * 4, now_ps + round(self.latency_ns * 1000))
        delay = done - round(get_sim_time("ps"))
        if delay > 0:
            await Timer(delay, "ps")
        await self.handle_mem_read_tlp(tlp)
