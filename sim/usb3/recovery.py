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
the caller's (:meth:`~busprobe.sim.usb3.hostile.HostileLink.recover`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .pipe import TS1, TS2, HostMode, PipePartnerDriver
from .training import (
    IDLE_RECEIVED_MIN,
    IDLE_SENT_AFTER,
    POLLING_ACTIVE_TIMEOUT_S,
    POLLING_CONFIGURATION_TIMEOUT_S,
    POLLING_IDLE_TIMEOUT_S,
    TS2_SENT_AFTER,
    TS_RECEIVED_MIN,
    TrainingResult,
    _wait_for,
)

__all__ = ["recover_to_u0", "device_in_recovery"]


def device_in_recovery(partner: PipePartnerDriver, ts1_before: int) -> bool:
    """True once the device sent a TS1 since the partner counted ``ts1_before`` of them: a
    device in U0 sends none, so a TS1 means it went to Recovery.Active."""
    return partner.received_sets(TS1)[1] > ts1_before


async def recover_to_u0(partner: PipePartnerDriver,
                        before_idle: Callable[[], Awaitable[None]] | None = None
                        ) -> TrainingResult:
    """Take the link through Recovery to U0 (the partner is in LINK mode after); whoever left
    U0 first, the port's steps are the same. ``before_idle`` is awaited before the host sends
    logical idle: the device is out of U0 and cannot be back before it sees that idle. Raises
    :class:`~busprobe.sim.usb3.training.TrainingFailed` naming the step that timed out."""
    result = TrainingResult()
    partner.send_ordered_set(TS1)
    await _wait_for(partner, "Recovery.Active", POLLING_ACTIVE_TIMEOUT_S,
                    lambda: max(partner.received_sets(TS1)[0],
                                partner.received_sets(TS2)[0]) >= TS_RECEIVED_MIN,
                    lambda: f"received TS1/TS2 {partner.received_sets(TS1)[1]}/"
                            f"{partner.received_sets(TS2)[1]}")
    result.steps["Recovery.Active"] = partner.cycle
    partner.send_ordered_set(TS2)
    first: list[int | None] = [None]

    def configured() -> bool:
        run, _ = partner.received_sets(TS2)
        if run and first[0] is None:
            first[0] = partner.ordered_sets_sent
        return run >= TS_RECEIVED_MIN and partner.ordered_sets_sent - first[0] >= TS2_SENT_AFTER

    await _wait_for(partner, "Recovery.Configuration", POLLING_CONFIGURATION_TIMEOUT_S,
                    configured, lambda: f"received {partner.received_sets(TS2)[1]} TS2")
    result.steps["Recovery.Configuration"] = partner.cycle
    if before_idle is not None:
        await before_idle()
    partner.set_mode(HostMode.LINK)
    idle_first: list[int | None] = [None]

    def idle() -> bool:
        if partner.received_idle_symbols and idle_first[0] is None:
            idle_first[0] = partner.symbols_sent
        return (partner.received_idle_symbols >= IDLE_RECEIVED_MIN
                and partner.symbols_sent - idle_first[0] >= IDLE_SENT_AFTER)

    await _wait_for(partner, "Recovery.Idle", POLLING_IDLE_TIMEOUT_S, idle,
                    lambda: "no logical idle received")
    result.steps["U0"] = partner.cycle
    return result
