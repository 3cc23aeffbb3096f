"""A hostile link between the soft endpoint's Verilator model and a root port that replays.

Inside a cocotb test on :data:`~.endpoint_model.TOPLEVEL`::

    bench = await HostileLinkBench.start(dut, seed=1)   # clock, reset, the wire running
    await bench.until_dl_active()
    bench.dll.send(bytes(tlp.pack()))                   # the root port's TLPs, numbered by it
    bench.faults.enabled = True                         # seeded faults both ways from now
    ...
    bench.injected()                                    # what was done to the link, by kind

Every clock (at the falling clock edge, as :class:`~.cocotb_bench.SoftEndpointBench`) each of
the four symbols of the endpoint's word passes :class:`~.wire_faults.WireFaults` on its way to
the :class:`~.partner.RootPortPartner`, whose data link layer is a
:class:`~.partner_transmitter.ReplayingDataLink`, and each of the partner's four symbols passes
it on the way back, an 8b/10b error reaching the endpoint as that lane's ``rx_error`` bit. The
partner steps a symbol at a time, so its packets start at any symbol of a word (the
endpoint's aligner puts them in lane 0). While the faults are enabled,
one symbol time in ``1 / loss_rate`` also loses a whole packet or repeats one, each kind in
turn at random: an endpoint TLP the root port never sees, an ACK the root port never sends,
a root port TLP the endpoint never sees, an endpoint ACK the root port never sees, an old
TLP the root port sends again.
"""

from __future__ import annotations

import collections
import random

import cocotb
from cocotb.triggers import ClockCycles, FallingEdge

from .cocotb_bench import RoutedTlps, pack_word, reset_model, unpack_word
from .endpoint_model import WORD_SYMBOLS
from .partner import RootPortPartner
from .partner_dll import DlState
from .partner_transmitter import ReplayingDataLink
from .wire_faults import WireFaults

__all__ = ["HostileLinkBench", "PACKET_FAULTS"]

#: The packet-level faults, by the :class:`ReplayingDataLink` attribute that asks for one.
PACKET_FAULTS = {
    "lost_tlps_to_root_port": "lose_tlps",
    "lost_acks_to_endpoint": "withhold_acks",
    "lost_tlps_to_endpoint": "lose_sent",
    "lost_acks_to_root_port": "lose_acks_in",
    "duplicated_tlps_to_endpoint": "duplicate_next",
}


class HostileLinkBench:
    """The endpoint model, its clock and wire, a replaying root port and seeded faults.

    Attributes
    ----------
    dut: the cocotb handle of the model's top.
    partner: the :class:`RootPortPartner`; ``dll`` its :class:`ReplayingDataLink`.
    faults: the :class:`WireFaults` (symbol faults both ways), off until ``enabled``.
    cycles: symbol times run since reset (four a clock).
    app_tlps: the TLPs the endpoint's router passed to the application, in order.

    Parameters
    ----------
    seed: the faults' seed (symbol faults and packet faults each have their own stream).
    rate: symbol faults per data symbol, each way.
    loss_rate: packet faults per symbol time.
    replay_timeout: the root port's REPLAY_TIMER, in symbol times.
    """

    def __init__(self, dut, *, seed: int, rate: float, loss_rate: float,
                 replay_timeout: int) -> None:
        self.dut = dut
        self.dll = ReplayingDataLink(replay_timeout=replay_timeout)
        self.partner = RootPortPartner(link=1, lane=0, dll=self.dll)
        self.faults = WireFaults(seed=seed, rate=rate)
        self.cycles = 0
        self.app_tlps = RoutedTlps()
        self._rng = random.Random(seed * 7919 + 1)
        self._loss_rate = loss_rate
        self._asked: collections.Counter[str] = collections.Counter()
        self._errors = 0

    @classmethod
    async def start(cls, dut, *, seed: int, rate: float = 1 / 300,
                    loss_rate: float = 1 / 1500, replay_timeout: int = 1200) -> HostileLinkBench:
        """Clock and reset the model, then run the wire in the background."""
        await reset_model(dut)
        bench = cls(dut, seed=seed, rate=rate, loss_rate=loss_rate,
                    replay_timeout=replay_timeout)
        cocotb.start_soon(bench._run_wire())
        return bench

    async def _run_wire(self) -> None:
        dut, partner, dll, faults = self.dut, self.partner, self.dll, self.faults
        rx_word, rx_error, tx_word, app_word = dut.rx_word, dut.rx_error, dut.tx_word, \
            dut.app_word
        falling = FallingEdge(dut.clk)
        back: list[int | None] = [None] * WORD_SYMBOLS
        rng, loss_rate = self._rng, self._loss_rate
        kinds = list(PACKET_FAULTS)
        while True:
            await falling
            sent = unpack_word(int(tx_word.value))
            answers, errors = [], 0
            for lane, symbol in enumerate(sent):
                answer = partner.step(faults.to_partner(symbol))
                dll.tick()
                # The packet faults keep their rate per symbol time.
                if faults.enabled and rng.random() < loss_rate:
                    kind = rng.choice(kinds)
                    self._asked[kind] += 1
                    attribute = PACKET_FAULTS[kind]
                    setattr(dll, attribute, getattr(dll, attribute) + 1)
                answer, error = faults.to_endpoint(answer)
                answers.append(answer)
                errors |= error << lane
            # The answers go out on the next clock: a word of latency, as a gearbox has.
            rx_word.value = pack_word(back)
            rx_error.value = self._errors
            back, self._errors = answers, errors
            self.cycles += WORD_SYMBOLS
            self.app_tlps.take(int(app_word.value))

    def output(self, name: str) -> int:
        """One of the endpoint's outputs (:data:`~.endpoint_model.OUTPUTS`) now."""
        return int(getattr(self.dut, name).value)

    async def run(self, symbols: int) -> None:
        """Run ``symbols`` symbol times (whole clocks, at least one)."""
        await ClockCycles(self.dut.clk, max(1, symbols // WORD_SYMBOLS))

    async def until_dl_active(self, *, cycles: int = 20_000) -> int:
        """Wait until the endpoint and the root port are both DL_Active; the symbol times
        since reset. Raises ``TimeoutError`` after ``cycles`` symbol times."""
        for _ in range(0, cycles, WORD_SYMBOLS):
            if self.output("dl_active") and self.dll.state == DlState.ACTIVE:
                return self.cycles
            await self.run(WORD_SYMBOLS)
        raise TimeoutError(f"not DL_Active after {cycles} symbol times; partner "
                           f"{self.partner.state}")

    def injected(self) -> dict[str, int]:
        """The faults done to the link so far, by kind: symbol faults by direction and kind,
        and the packet faults that took effect (asked for but still pending are not)."""
        dll = self.dll
        pending = {kind: getattr(dll, attribute) for kind, attribute in PACKET_FAULTS.items()}
        done = {kind: self._asked[kind] - pending[kind] for kind in PACKET_FAULTS}
        return {**dict(self.faults.injected), **done}

    def clear_pending(self) -> None:
        """Forget the packet faults asked for that have not happened yet."""
        for kind, attribute in PACKET_FAULTS.items():
            self._asked[kind] -= getattr(self.dll, attribute)
            setattr(self.dll, attribute, 0)
