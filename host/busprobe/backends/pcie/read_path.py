"""The device's DMA read path as the driver sees it: failure, reset, completion timeout.

The core checks every TLP the link delivers (``docs/DESIGN.md`` §3.1). A read that loses data to
the link (a poisoned, unsuccessful, malformed or inconsistent completion, or none within the
completion timeout) fails: ``busprobe_rd_status`` shows :data:`~busprobe.protocol.pcie.RD_FAILED`
and the reader's MSI fires. Nothing more arrives for that DMA, and the read path stays stalled
until the driver resets it (:meth:`ReadPath.reset_writes`, then :meth:`ReadPath.wait_reset`).
Faults that harm no read (unexpected completions, malformed requests) are only counted; they
reach the point's errors through the telemetry (:func:`link_errors`).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...protocol import pcie as proto
from ...transport import DeviceGone, RepeatFailed, TransferTimeout
from .platform import Bar

__all__ = ["ReadPath", "ReadPathFailed", "link_errors", "describe_link_errors"]

_MASK32 = 0xFFFF_FFFF
#: Polls of ``rd_status`` a read-path reset may take (it waits for 16 idle transmit cycles).
_RESET_POLLS = 1000
_WORDS = {
    "rx_malformed": "malformed TLP", "rx_poisoned": "poisoned TLP",
    "rd_cpl_unexpected": "unexpected completion", "rd_cpl_status": "UR/CA completion",
    "rd_cpl_mismatch": "inconsistent completion", "rd_cpl_timeouts": "completion timeout",
}


class ReadPathFailed(RepeatFailed):
    """A DMA read lost data on the link; the DMA was aborted and the read path reset."""


def link_errors(counters: Mapping[str, object]) -> dict[str, int]:
    """The link faults among the telemetry ``counters`` (:data:`~busprobe.protocol.pcie.
    LINK_ERRORS`), the ones that are 0 left out."""
    return {name: int(counters[name]) for name in proto.LINK_ERRORS
            if int(counters.get(name, 0))}


def describe_link_errors(errors: Mapping[str, int]) -> str:
    """``"1 poisoned TLP, 2 completion timeouts"`` (or ``"no link fault counted"``)."""
    parts = [f"{n} {_WORDS[name]}{'' if n == 1 else 's'}" for name, n in errors.items() if n]
    return ", ".join(parts) or "no link fault counted"


class ReadPath:
    """``busprobe_rd_status``, ``busprobe_read_reset`` and ``busprobe_completion_timeout``.

    Parameters
    ----------
    bar : Bar
        The device's BAR0.
    """

    def __init__(self, bar: Bar) -> None:
        self.bar = bar

    def status(self) -> int:
        status = self.bar.read32(proto.csr("busprobe_rd_status"))
        if status == _MASK32:
            raise DeviceGone("BAR0 reads all ones: the device dropped off the bus")
        return status

    def failed(self) -> bool:
        return bool(self.status() & proto.RD_FAILED)

    def reset_writes(self) -> list[tuple[int, int]]:
        """The BAR0 write that resets the read path (both DMA engines must be disabled first)."""
        return [(proto.csr("busprobe_read_reset"), 1)]

    def wait_reset(self) -> None:
        """Return once the reset asked for is done (nothing may start on the read path before:
        the reset waits for the link to go quiet, and would hit a DMA started meanwhile)."""
        for _ in range(_RESET_POLLS):
            if not self.status() & proto.RD_RESET_PENDING:
                return
        raise TransferTimeout("PCIe read path reset did not complete: the device kept "
                              "transmitting with both DMA engines disabled")

    def set_completion_timeout(self, seconds: float, clock_hz: int) -> None:
        """How long a read may wait for its completions before it fails (PCIe allows 50 us to
        50 ms; the device fails a read 1 to 1.25 times this after it left)."""
        cycles = max(1, min(_MASK32, round(seconds * clock_hz)))
        self.bar.write32(proto.csr("busprobe_completion_timeout"), cycles)

    def failure(self, what: str) -> ReadPathFailed:
        """The error to raise for a failed read, with the link faults the device counted."""
        counters = {name: self.bar.read32(proto.csr(f"busprobe_{name}"))
                    for name in proto.LINK_ERRORS}
        return ReadPathFailed(f"PCIe DMA read failed {what}: the link lost its data "
                              f"({describe_link_errors(link_errors(counters))}); DMA aborted "
                              "and the read path reset")
