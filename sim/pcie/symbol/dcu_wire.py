"""The DCU and a root port for the Versa PCIe builds' gate-level netlists, in cocotb.

The netlist (:mod:`busprobe.sim.netlist.pcie`) is cut at its DCU channel's fabric ports, so this
bench plays the DCU towards the fabric and cocotbext-pcie's root complex on the far side of the
lane, through the same :class:`~.cocotb_port.SymbolPort` as the RTL benches but with the root
port's partner scrambling (§4.2.1.3), as the DCU only does 8b/10b:

- **Clocks** as on the board: the DCU's fabric clock ``pclk`` at 125 MHz, the link's
  ``link_clk`` at 62.5 MHz from the same reference with its edges 1.3 ns after ``pclk``'s
  (a PLL's phase is unknown; no test may depend on it), ``ctl_clk`` at 100 MHz (the board's
  oscillator, unrelated).
- **Symbols**: every ``pclk`` the two symbols the fabric gave the DCU go to the root port in
  turn (none while ``tx_idle``: electrical idle), and the two it answers are handed to the
  fabric the next ``pclk`` in LUNA's bus layout (half 0 in bits 7:0 and its K flag bit 8, half 1
  from bit 12), with loss of signal while the root port is silent.
- **Receiver detection** as TN1261 describes the DCU's: ``pcie_done`` falls a few clocks after
  the ``pcie_ct`` strobe and rises again with ``pcie_con`` (a receiver found: the root port is
  there).
- **Until the DCU's receiver locks** (its LED; LUNA's reset sequencer gives the CDR 1.25 ms)
  the fabric ignores what it receives, so the bench does not step the root port then: the
  clocks run in steps of :data:`UNLOCKED_STEP` with the lane's signal present, and what the
  endpoint sends meanwhile is lost, as to a root port not yet listening. Python per DCU clock
  is what a gate-level run spends its time on; this takes the wait from some 60 s to a few.
- **Status from the LEDs** (the Versa's LEDs are lit low), in the design's order: the
  endpoint's :data:`~busprobe.gateware.boards.soft_pcie_endpoint.STATUS_LEDS` (L0, DL_Active,
  memory space enabled, the toggles of a TLP for BAR0 and of an unsupported request answered)
  or the SoC's :data:`~busprobe.gateware.boards.versa_pcie_soc.SOC_LEDS` (``leds=``; L0,
  DL_Active, the toggles of a Recovery, an MSI, a replay), every toggle counted here. The SoC's
  UART receiver (``uart_rx``, if the netlist has it) is held idle.

It has what :class:`~.soc_bench.SoftSocHost` asks of a bench (``rc``, ``port``, ``cycles``,
:meth:`~DcuBench.until_dl_active`, :meth:`~DcuBench.wait`), so the SoC's netlist is driven by
the same host as its RTL.
"""

from __future__ import annotations

import cocotb
from busprobe.gateware.boards.soft_pcie_endpoint import STATUS_LEDS
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, First, RisingEdge, Timer
from cocotb.utils import get_sim_time
from cocotbext.pcie.core import RootComplex

from .cocotb_bench import attach_root_port
from .cocotb_port import SymbolPort

__all__ = ["DcuBench"]

#: The DCU's clock and the link's, in ps; the link's edges this far after the DCU's.
PCLK_PS, LINK_PS, CTL_PS, LINK_PHASE_PS = 8_000, 16_000, 10_000, 1_300
#: ``pclk`` cycles the DCU's receiver detection keeps ``pcie_done`` low.
DETECTION_CYCLES = 16
#: ``pclk`` cycles run at a time while the DCU's receiver is not locked.
UNLOCKED_STEP = 256
_HALF_1 = 12  # LUNA's 24-bit bus: half 1's byte from bit 12, its K flag at bit 20


class DcuBench:
    """The netlist's DCU, clocks and wire, a :class:`SymbolPort` and a root complex.

    Attributes
    ----------
    dut: the cocotb handle of the netlist's top.
    port: the :class:`SymbolPort` (``port.partner`` is the scrambling root port).
    rc: cocotbext-pcie's ``RootComplex`` with ``port`` as its one root port.
    cycles: ``pclk`` cycles since the clocks started (two symbol times each).
    stepped: those the root port was stepped in (the rest: the receiver was not locked).
    leds: what each LED shows, LED 0 first.
    toggles: how often each toggling LED changed (``"TLP for BAR0 (toggles)"``, ...).
    """

    def __init__(self, dut, *, leds: tuple[str, ...] = STATUS_LEDS, **partner_options) -> None:
        self.dut = dut
        self.leds = leds
        self.port = SymbolPort(scrambled=True, **partner_options)
        self.rc = RootComplex()
        attach_root_port(self.rc, self.port)
        self.stepped = 0
        self.toggles = {name: 0 for name in leds if "toggles" in name}
        self._detecting = 0

    @classmethod
    async def start(cls, dut, **options) -> DcuBench:
        """Start the clocks, hold the slot's PERST# and the PLL's lock for ten control clocks,
        then run the DCU and the wire in the background. ``options``: ``leds`` and the root
        port's (:class:`SymbolPort`)."""
        bench = cls(dut, **options)
        dut.pll_locked.value, dut.button_n.value, dut.perst_n.value = 0, 1, 0
        if hasattr(dut, "uart_rx"):
            dut.uart_rx.value = 1
        dut.rx_d.value, dut.rx_los.value, dut.rx_lol.value, dut.pll_lol.value = 0, 1, 0, 0
        dut.pcie_done.value, dut.pcie_con.value = 1, 0
        Clock(dut.ctl_clk, CTL_PS, unit="ps", impl="gpi").start()
        Clock(dut.pclk, PCLK_PS, unit="ps", impl="gpi").start()
        await Timer(LINK_PHASE_PS, "ps")
        Clock(dut.link_clk, LINK_PS, unit="ps", impl="gpi").start()
        await ClockCycles(dut.ctl_clk, 10)
        dut.pll_locked.value, dut.perst_n.value = 1, 1
        cocotb.start_soon(bench._run())
        return bench

    @property
    def cycles(self) -> int:
        return int(get_sim_time("ps")) // PCLK_PS

    def led(self, name: str) -> bool:
        """Whether the LED showing ``name`` is lit."""
        return not int(getattr(self.dut, f"led_n{self.leds.index(name)}").value)

    async def wait(self, cycles: int) -> None:
        """Let ``cycles`` link clocks (62.5 MHz, four symbol times each) pass."""
        await Timer(cycles * LINK_PS, "ps")

    async def _run(self) -> None:
        dut, port = self.dut, self.port
        falling = FallingEdge(dut.pclk)
        back: list[int | None] = [port.symbol_time(None), port.symbol_time(None)]
        lit = {name: self.led(name) for name in self.toggles}
        while True:
            if None not in back and not self.led("DCU receiver locked"):
                dut.rx_los.value = 0
                strobe = RisingEdge(dut.pcie_ct)
                step = Timer(UNLOCKED_STEP * PCLK_PS, "ps")
                if await First(step, strobe) is strobe:
                    await self._answer_detection()
                continue
            if None in back:
                dut.rx_los.value = 1
            else:
                dut.rx_los.value = 0
                dut.rx_d.value = back[0] | back[1] << _HALF_1
            await falling
            self.stepped += 1
            word = int(dut.tx_d.value)
            sent = [None, None] if int(dut.tx_idle.value) else \
                [word & 0x1FF, word >> _HALF_1 & 0x1FF]
            back = [port.symbol_time(symbol) for symbol in sent]
            self._detect()
            for name in self.toggles:
                now = self.led(name)
                self.toggles[name] += now != lit[name]
                lit[name] = now

    async def _answer_detection(self) -> None:
        dut = self.dut
        dut.pcie_done.value = 0
        await ClockCycles(dut.pclk, DETECTION_CYCLES)
        dut.pcie_done.value, dut.pcie_con.value = 1, 1

    def _detect(self) -> None:
        dut = self.dut
        if self._detecting:
            self._detecting -= 1
            if not self._detecting:
                dut.pcie_done.value, dut.pcie_con.value = 1, 1
        elif int(dut.pcie_ct.value) and int(dut.pcie_det_en.value):
            dut.pcie_done.value = 0
            self._detecting = DETECTION_CYCLES

    async def until_dl_active(self, *, cycles: int = 400_000) -> int:
        """Wait until the endpoint's DL_Active LED is lit and the root port has initialised
        flow control (looked at every 16 DCU clocks); the ``pclk`` cycles since the clocks
        started. Raises ``TimeoutError`` after ``cycles``."""
        for _ in range(cycles // 16):
            if self.led("DL_Active") and self.port.fc_state[0].initialized.is_set():
                return self.cycles
            await Timer(16 * PCLK_PS, "ps")
        raise TimeoutError(f"not DL_Active after {cycles} DCU clocks; root port "
                           f"{self.port.partner.state}, LEDs "
                           f"{[name for name in self.leds if self.led(name)]}")
