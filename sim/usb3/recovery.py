"""The host port's side of link Recovery: Recovery.Active to U0 (USB 3.2 §7.5.10).

Recovery is the tail of link training without the equaliser: the port leaves U0 (or follows
the device out of it) and the two exchange TS1, then TS2, then logical idle, each step ended by
what the partner counts from the device (``sim/hdl/pipe_partner.sv``), as in
:mod:`.training`:

Recovery.Active
    TS1 until 8 consecutive TS1 or TS2 are received (§7.5.10.3).
Recovery.Configuration
    TS2 until 8 consecutive TS2 are received and 16 sent after the first of them (§7.5.10.4).
Recovery.Idle
    Logical idle until 8 consecutive idle symbols are received and 16 sent after the first
    (§7.5.10.5); then U0.

Each step has the spec's timeout (12 ms, 12 ms, 2 ms; Table 7-12). The link layer's work after
U0 (the header sequence and credit advertisement, retransmission of unacknowledged headers) is
the caller's (:meth:`~busprobe.sim.usb3.hostile.HostileLink.recover`,
:meth:`~busprobe.sim.usb3.session.Usb3Session.hot_reset`).

A port reset (what xhci_hcd's port reset of a SuperSpeed device is, USB 3.2 §7.5.12) is the
same walk with the Hot Reset bit (Link Configuration bit 0) in the port's TS2s: it reaches the
device in Recovery.Configuration, so the device goes on to Hot Reset.Active (LUNA: its link
layer and its USB device state, address and configuration, reset); plain TS2s let it out to
Hot Reset.Exit, and the idle handshake to U0.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .pipe import TS1, TS2, PipePartnerDriver
from .training import (
    POLLING_ACTIVE_TIMEOUT_S,
    POLLING_CONFIGURATION_TIMEOUT_S,
    TrainingResult,
    _wait_for,
    idle_handshake,
    ts1_until_answered,
    ts2_until_configured,
)

__all__ = ["recover_to_u0", "device_in_recovery", "HOT_RESET"]

#: TS1/TS2 Link Configuration bit 0: Hot Reset (USB 3.2 Table 6-6).
HOT_RESET = 0x01


def device_in_recovery(partner: PipePartnerDriver, ts1_before: int) -> bool:
    """True once the device sent a TS1 since the partner counted ``ts1_before`` of them: a
    device in U0 sends none, so a TS1 means it went to Recovery.Active."""
    return partner.received_sets(TS1)[1] > ts1_before


async def recover_to_u0(partner: PipePartnerDriver,
                        before_idle: Callable[[], Awaitable[None]] | None = None, *,
                        hot_reset: bool = False) -> TrainingResult:
    """Take the link through Recovery to U0 (the partner is in LINK mode after); whoever left
    U0 first, the port's steps are the same. ``before_idle`` is awaited before the host sends
    logical idle: the device is out of U0 and cannot be back before it sees that idle.
    ``hot_reset``: a port reset (see the module). Raises
    :class:`~busprobe.sim.usb3.training.TrainingFailed` naming the step that timed out."""
    result = TrainingResult()
    await ts1_until_answered(partner, "Recovery.Active", POLLING_ACTIVE_TIMEOUT_S)
    result.steps["Recovery.Active"] = partner.cycle
    if hot_reset:
        partner.discard_captures()  # what the device sent before it left U0 is forgotten
    await ts2_until_configured(partner, "Recovery.Configuration",
                               config=HOT_RESET if hot_reset else 0)
    result.steps["Recovery.Configuration"] = partner.cycle
    if hot_reset:
        # The bit cleared: once through Hot Reset.Active (its own TS2s carry the bit, which
        # the partner's recogniser leaves out) the device sends logical idle (Hot Reset.Exit).
        # Had it missed the bit it would idle in Recovery.Idle instead, at its old address:
        # the enumeration after, at address 0, finds that out.
        ts2_before = partner.received_sets(TS2)[1]
        partner.send_ordered_set(TS2)
        await _wait_for(partner, "Hot Reset.Active", POLLING_CONFIGURATION_TIMEOUT_S,
                        lambda: partner.received_idle_symbols > 0,
                        lambda: f"received {partner.received_sets(TS2)[1] - ts2_before} more "
                                f"TS2, no idle after them")
        result.steps["Hot Reset.Active"] = partner.cycle
    if before_idle is not None:
        await before_idle()
    await idle_handshake(partner, "Hot Reset.Exit" if hot_reset else "Recovery.Idle")
    result.steps["U0"] = partner.cycle
    return result
