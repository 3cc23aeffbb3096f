"""The host port's side of SuperSpeed link training: Polling.LFPS to U0 (USB 3.2 §7.5.4).

The steps a downstream port takes after power-on, each ended by what the device sends back as
the partner counts it (pipe_partner.sv), never by a fixed wait:

Polling.LFPS
    Polling LFPS bursts until at least 16 are sent, 2 were received, and 4 were sent after the
    first one received (§7.5.4.3).
Polling.RxEQ
    TSEQ ordered sets. The spec asks for 65,536 (§7.5.4.4); the model sends ``tseq_sets``
    (default :data:`TSEQ_SETS`, far fewer) because its receiver needs no equalisation. The device
    still sends its full 65,536 (LUNA's TSTransceiver), which the next step waits out.
Polling.Active
    TS1 until 8 consecutive TS1 or TS2 are received (§7.5.4.5).
Polling.Configuration
    TS2 until 8 consecutive TS2 are received and 16 sent after the first of them (§7.5.4.6).
Polling.Idle
    Logical idle until 8 consecutive idle symbols are received and 16 sent after the first
    (§7.5.4.7); then U0.

Each step has the spec's timeout (§7.5.4, Table 7-12); a step that times out raises
:class:`TrainingFailed` naming the step and what was missing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .pipe import CLOCK_HZ, TS1, TS2, TSEQ, HostMode, PipePartnerDriver

__all__ = ["TSEQ_SETS", "TrainingFailed", "TrainingResult", "train_to_u0"]

#: TSEQ ordered sets the model sends in Polling.RxEQ (the spec's 65,536 is for a real receiver's
#: equaliser; the model has none). An assumption of the model, said so in docs/DESIGN.md.
TSEQ_SETS = 256
#: Timeouts (USB 3.2 Table 7-12), seconds.
POLLING_LFPS_TIMEOUT_S = 360e-3
POLLING_ACTIVE_TIMEOUT_S = 12e-3
POLLING_CONFIGURATION_TIMEOUT_S = 12e-3
POLLING_IDLE_TIMEOUT_S = 2e-3
#: Polling.LFPS exit counts (§7.5.4.3).
LFPS_SENT_MIN, LFPS_RECEIVED_MIN, LFPS_SENT_AFTER_RECEIVED = 16, 2, 4
#: Consecutive sets / symbols received, and sent after the first received, to leave a state.
TS_RECEIVED_MIN, TS2_SENT_AFTER, IDLE_RECEIVED_MIN, IDLE_SENT_AFTER = 8, 16, 8, 16
#: How often (cycles) the model looks at the partner's counters while a step waits; a step ends
#: at most this late, well inside every timeout.
POLL_CYCLES = 64


class TrainingFailed(AssertionError):
    """Link training did not reach U0; the message names the step and what was missing."""


@dataclass
class TrainingResult:
    """When each training step ended (cycles of the 125 MHz PIPE clock since reset)."""

    steps: dict[str, int] = field(default_factory=dict)

    @property
    def u0_cycle(self) -> int:
        return self.steps["U0"]


def _polling_lfps_cycles() -> tuple[int, int]:
    # LUNA's one definition of Polling LFPS timing (physical/lfps.py; USB 3.2 Table 6-30).
    from luna.gateware.usb.usb3.physical.lfps import _PollingLFPS

    return (math.ceil(_PollingLFPS.burst.t_typ * CLOCK_HZ),
            math.ceil(_PollingLFPS.repeat.t_typ * CLOCK_HZ))


async def _wait_for(partner: PipePartnerDriver, step: str, timeout_s: float, done, missing
                    ) -> None:
    deadline = partner.cycle + math.ceil(timeout_s * CLOCK_HZ)
    while not done():
        if partner.cycle >= deadline:
            raise TrainingFailed(f"link training: {step} timed out after {timeout_s * 1e3:g} ms "
                                 f"({missing()})")
        await partner.wait_cycles(POLL_CYCLES)


async def train_to_u0(partner: PipePartnerDriver, *, tseq_sets: int = TSEQ_SETS
                      ) -> TrainingResult:
    """Train the link from Rx.Detect (VBUS on) to U0; the partner is in LINK mode after."""
    result = TrainingResult()
    partner.set_vbus(True)
    burst, period = _polling_lfps_cycles()
    partner.send_lfps(burst, period)
    first_received = [None]

    def lfps_done() -> bool:
        received = partner.device_lfps_bursts
        if received and first_received[0] is None:
            first_received[0] = partner.lfps_sent
        return (partner.lfps_sent >= LFPS_SENT_MIN and received >= LFPS_RECEIVED_MIN
                and partner.lfps_sent - first_received[0] >= LFPS_SENT_AFTER_RECEIVED)

    await _wait_for(partner, "Polling.LFPS", POLLING_LFPS_TIMEOUT_S, lfps_done,
                    lambda: f"sent {partner.lfps_sent} LFPS bursts, received "
                            f"{partner.device_lfps_bursts}")
    partner.stop_lfps()
    result.steps["Polling.LFPS"] = partner.cycle

    partner.send_ordered_set(TSEQ)
    sent_before = partner.ordered_sets_sent
    await _wait_for(partner, "Polling.RxEQ", POLLING_ACTIVE_TIMEOUT_S,
                    lambda: partner.ordered_sets_sent - sent_before >= tseq_sets,
                    lambda: "TSEQ not sent")
    result.steps["Polling.RxEQ"] = partner.cycle

    await ts1_until_answered(partner, "Polling.Active", POLLING_ACTIVE_TIMEOUT_S)
    result.steps["Polling.Active"] = partner.cycle
    await ts2_until_configured(partner, "Polling.Configuration")
    result.steps["Polling.Configuration"] = partner.cycle
    await idle_handshake(partner, "Polling.Idle")
    result.steps["U0"] = partner.cycle
    return result


async def ts1_until_answered(partner: PipePartnerDriver, step: str, timeout_s: float) -> None:
    """TS1 until 8 consecutive TS1 or TS2 are received (Polling.Active, Recovery.Active)."""
    partner.send_ordered_set(TS1)
    await _wait_for(partner, step, timeout_s,
                    lambda: max(partner.received_sets(TS1)[0],
                                partner.received_sets(TS2)[0]) >= TS_RECEIVED_MIN,
                    lambda: f"received TSEQ/TS1/TS2 {partner.received_sets(TSEQ)[1]}/"
                            f"{partner.received_sets(TS1)[1]}/{partner.received_sets(TS2)[1]}")


async def ts2_until_configured(partner: PipePartnerDriver, step: str, config: int = 0) -> None:
    """TS2 (Link Configuration ``config``) until 8 consecutive TS2 are received and 16 sent
    after the first of them (Polling.Configuration, Recovery.Configuration)."""
    partner.send_ordered_set(TS2, config=config)
    first: list[int | None] = [None]

    def configured() -> bool:
        run, _ = partner.received_sets(TS2)
        if run and first[0] is None:
            first[0] = partner.ordered_sets_sent
        return run >= TS_RECEIVED_MIN and partner.ordered_sets_sent - first[0] >= TS2_SENT_AFTER

    await _wait_for(partner, step, POLLING_CONFIGURATION_TIMEOUT_S, configured,
                    lambda: f"received {partner.received_sets(TS2)[1]} TS2")


async def idle_handshake(partner: PipePartnerDriver, step: str) -> None:
    """Logical idle until 8 consecutive idle symbols are received and 16 sent after the first."""
    partner.set_mode(HostMode.LINK)
    idle_first: list[int | None] = [None]

    def idle_done() -> bool:
        if partner.received_idle_symbols and idle_first[0] is None:
            idle_first[0] = partner.symbols_sent
        return (partner.received_idle_symbols >= IDLE_RECEIVED_MIN
                and partner.symbols_sent - idle_first[0] >= IDLE_SENT_AFTER)

    await _wait_for(partner, step, POLLING_IDLE_TIMEOUT_S, idle_done,
                    lambda: "no logical idle received")
