"""Return the DMA read path to its power-on state without resetting the device (Migen).

A read whose completions never all arrive (dropped, poisoned, UR/CA, malformed: see
:mod:`.rx_guard`) stalls LitePCIe for good: its completion reorder controller
(``litepcie.tlp.controller.LitePCIeTLPController``) waits for that tag's data before it releases
any later one, and never gets the tag back; disabling the DMA reader does not clear it. LitePCIe
has no reset for either, and resetting the whole SoC would also lose the BAR0 request carrying
the reset, the telemetry and the link state. :class:`ReadPathReset` resets exactly the read
path: the DMA reader (its descriptor FIFO, splitter, data FIFO, state machine; its CSRs keep
their values), the completion controller (tags, request queue, completion buffers) and the
receive guard's record of reads in flight (:attr:`RxTlpGuard.flush`).

It waits until the transmit stream has been idle for :data:`QUIET_CYCLES`: the controller and
the transmit arbiter then hold no request half handed over, so the link never sees a truncated
TLP. The host disables both DMA engines first (``busprobe_read_reset``'s rule), so the wait ends
after at most the TLP the link was still taking.
"""

from __future__ import annotations

from migen import If, Module, Signal
from migen.fhdl.decorators import ResetInserter

__all__ = ["ReadPathReset", "reset_with", "QUIET_CYCLES"]

#: Idle transmit cycles before the reset: more than the packetizer's pipeline.
QUIET_CYCLES = 16


class ReadPathReset(Module):
    """Reset the read path on request once the transmit stream is quiet.

    Attributes
    ----------
    request : Signal(), input
        One-cycle pulse asking for a reset (the ``busprobe_read_reset`` write).
    pending : Signal(), output
        Asked for and not done yet.
    reset : Signal(), output
        One-cycle pulse: reset the read path now.

    Parameters
    ----------
    tx : stream.Endpoint
        The PHY's transmit stream (core to link), only observed.
    """

    def __init__(self, tx):
        self.request = Signal()
        self.pending = Signal()
        self.reset = Signal()
        quiet = Signal(max=QUIET_CYCLES + 1)
        self.comb += self.reset.eq(self.pending & (quiet == QUIET_CYCLES))
        self.sync += [
            If(tx.valid, quiet.eq(0)).Elif(quiet != QUIET_CYCLES, quiet.eq(quiet + 1)),
            If(self.reset, self.pending.eq(0)),
            If(self.request, self.pending.eq(1)),
        ]


def reset_with(reset, *, endpoint, reader):
    """Make ``reset`` reset LitePCIe's DMA ``reader`` and ``endpoint``'s completion controller.

    Workaround for LitePCIe having no reset for either (see the module docstring). The
    controller is created late, in the crossbar's ``do_finalize``, so the reset is attached
    there, before the crossbar's logic is collected.
    """
    ResetInserter()(reader)
    crossbar = endpoint.crossbar
    finalize = crossbar.do_finalize

    def do_finalize():
        finalize()
        controller = ResetInserter()(crossbar.controller)
        crossbar.comb += controller.reset.eq(reset)

    crossbar.do_finalize = do_finalize
    return [reader.reset.eq(reset)]
