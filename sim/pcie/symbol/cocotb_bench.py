"""cocotbext-pcie's root complex on the soft endpoint's Verilator model, symbol by symbol.

Inside a cocotb test on :data:`~.endpoint_model.TOPLEVEL`::

    bench = await SoftEndpointBench.start(dut)   # clock, reset, the wire running
    await bench.until_dl_active()                # trained, flow control initialised both ways
    await bench.rc.enumerate(timeout=..., timeout_unit="us")
    bench.output("max_payload_size")             # the endpoint's outputs, as ints

Every symbol time a coroutine hands the endpoint's symbol to :meth:`SymbolPort.symbol_time`
(the :class:`~.partner.RootPortPartner` under cocotbext-pcie's ``Port``) and drives what the
partner sends back, both at the falling clock edge, when the endpoint's outputs are settled
and its inputs are taken at the next rising edge: one symbol each way per clock, as
:class:`~.amaranth_bench.SymbolExchange` does in Amaranth's simulator. On the model of the
link at four symbols a clock (``word_clock`` among its ports) a word each way on the clocks
the model marks, its four symbols through ``symbol_time`` in turn, the answer on the next
word clock, as :class:`~.word_exchange.WordExchange` does.
"""

from __future__ import annotations

import cocotb
from busprobe.protocol.pcie_symbols import KCode
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge
from cocotbext.pcie.core import RootComplex

from .amaranth_bench import SYMBOL_PERIOD
from .cocotb_port import SymbolPort, park_unused_port
from .endpoint_model import APP_LAST, APP_VALID, SYMBOL_BITS, WORD_SYMBOLS

__all__ = ["SoftEndpointBench", "attach_root_port", "reset_model", "RoutedTlps",
           "WIRE_FLAG", "SYMBOL_MASK"]

#: rx_word: a symbol is on the wire; tx_word: the endpoint is in electrical idle.
WIRE_FLAG = 1 << SYMBOL_BITS
SYMBOL_MASK = WIRE_FLAG - 1


class RoutedTlps(list):
    """The TLPs the endpoint's router passed to the application (raw bytes), in order,
    assembled from the model's ``app_word`` by :meth:`take` once a clock (a byte, or with
    ``unit_bytes`` 4 a DW, then ``last``, then ``valid``)."""

    def __init__(self, unit_bytes: int = 1) -> None:
        super().__init__()
        self._bytes = bytearray()
        self._unit_bytes = unit_bytes
        bits = 8 * unit_bytes
        self._last, self._valid = (APP_LAST, APP_VALID) if unit_bytes == 1 else \
            (1 << bits, 1 << (bits + 1))

    def take(self, app_word: int) -> None:
        if app_word & self._valid:
            data = app_word & ((1 << 8 * self._unit_bytes) - 1)
            self._bytes.extend(data.to_bytes(self._unit_bytes, "little"))
            if app_word & self._last:
                self.append(bytes(self._bytes))
                self._bytes.clear()


async def reset_model(dut, *, prefix: str = "", clock=None, reset=None,
                      period: float = SYMBOL_PERIOD) -> None:
    """Start the model's clock (``period``: a symbol time, or two for the word model) and
    hold it in reset for four clocks, the endpoint's receiver in electrical idle (and without
    decode errors, where the top has ``rx_error``) and a receiver found at the far end.
    ``prefix``: of the endpoint's ports in the top's names; ``clock``, ``reset``: the top's
    handles (default ``clk``, ``rst``)."""
    clock = dut.clk if clock is None else clock
    reset = dut.rst if reset is None else reset
    Clock(clock, round(period * 1e12), unit="ps", impl="gpi").start()
    reset.value = 1
    getattr(dut, f"{prefix}rx_word").value = 0
    if hasattr(dut, f"{prefix}rx_error"):
        getattr(dut, f"{prefix}rx_error").value = 0
    getattr(dut, f"{prefix}receiver_detected").value = 1
    await ClockCycles(clock, 4)
    reset.value = 0


def attach_root_port(rc: RootComplex, port: SymbolPort):
    """A new root port of ``rc`` whose link is ``port``; returns the root port (its bridge)."""
    root_port = rc.make_port()
    built = root_port.downstream_port
    root_port.set_downstream_port(port)
    park_unused_port(built)
    return root_port


class SoftEndpointBench:
    """The endpoint model, its clock and wire, a :class:`SymbolPort` and a root complex.

    Attributes
    ----------
    dut: the cocotb handle of the model's top.
    prefix: the endpoint's ports are ``dut.<prefix><name>`` (``rx_word``, ``tx_word``,
        ``receiver_detected``, the outputs; ``app_word`` where the model has it).
    clock, reset: the top's clock (one symbol a clock) and active-high reset.
    port: the :class:`SymbolPort` (``port.partner`` is the symbol-level root port).
    rc: cocotbext-pcie's ``RootComplex`` with ``port`` as its one root port.
    cycles: symbol times run since reset.
    corrupt_tlps: the endpoint's next TLPs to reach the root port with one header bit flipped
        (a bad LCRC: the root port NAKs, the endpoint replays).
    app_tlps: the TLPs the endpoint's router passed to the application (raw bytes), in order.
    tx_log: None, or a list the endpoint's symbols are appended to each symbol time (None for
        electrical idle): set it to a list to record a stretch of the endpoint's lane.
    silent: no root port on the lane: the endpoint finds no receiver and hears nothing.
    """

    #: Which symbol after STP a corruption flips: a header byte (after the 2-byte sequence).
    CORRUPTED_SYMBOL = 6

    def __init__(self, dut, *, prefix: str = "", clock: str = "clk", reset: str = "rst",
                 **partner_options) -> None:
        self.dut = dut
        self.prefix = prefix
        self.clock = getattr(dut, clock)
        self.reset = getattr(dut, reset)
        self.rx_word = getattr(dut, f"{prefix}rx_word")
        self.tx_word = getattr(dut, f"{prefix}tx_word")
        self.app_word = getattr(dut, f"{prefix}app_word", None)
        #: Symbols a clock moves on the model's wire (4 on the word model's word clocks),
        #: told by ``rx_word``'s width (a port, where a name might find an internal signal).
        self.lanes = WORD_SYMBOLS if len(self.rx_word) > SYMBOL_BITS + 1 else 1
        self.word_clock = getattr(dut, f"{prefix}word_clock") if self.lanes > 1 else None
        self.port = SymbolPort(**partner_options)
        self.rc = RootComplex()
        attach_root_port(self.rc, self.port)
        self.cycles = 0
        self.corrupt_tlps = 0
        self.silent = False
        self._countdown = 0
        self.app_tlps = RoutedTlps(unit_bytes=self.lanes)
        self.tx_log: list | None = None

    @classmethod
    async def start(cls, dut, **options) -> SoftEndpointBench:
        """Clock and reset the model, then run the wire in the background. ``options``: the
        constructor's (``prefix``: of the endpoint's ports in the top's names; ``clock``,
        ``reset``: the top's clock and reset; the partner's options)."""
        bench = cls(dut, **options)
        # The word model's clock is 125 MHz: two symbol times, a word every other clock.
        period = SYMBOL_PERIOD * (2 if bench.lanes == WORD_SYMBOLS else 1)
        await reset_model(dut, prefix=bench.prefix, clock=bench.clock, reset=bench.reset,
                          period=period)
        cocotb.start_soon(bench._run_wire() if bench.lanes == 1 else bench._run_word_wire())
        return bench

    async def _run_wire(self) -> None:
        port, rx_word, tx_word, app_word = self.port, self.rx_word, self.tx_word, self.app_word
        falling = FallingEdge(self.clock)
        back = port.symbol_time(None)
        while True:
            await falling
            word = int(tx_word.value)
            sent = None if word & WIRE_FLAG else word & SYMBOL_MASK
            if self.corrupt_tlps and sent is not None:
                sent = self._corrupt(sent)
            if self.tx_log is not None:
                self.tx_log.append(sent)
            back = port.symbol_time(sent)
            rx_word.value = 0 if back is None or self.silent else back | WIRE_FLAG
            self.cycles += 1
            if app_word is not None:
                self.app_tlps.take(int(app_word.value))

    async def _run_word_wire(self) -> None:
        """:meth:`_run_wire` a word at a time: on each clock the model marks, its four symbols
        to the root port in turn, the root port's four answers driven on the next one."""
        port, rx_word, tx_word, app_word = self.port, self.rx_word, self.tx_word, self.app_word
        falling = FallingEdge(self.clock)
        lanes, idle_flag = self.lanes, 1 << (self.lanes * SYMBOL_BITS)
        back: list[int | None] = [port.symbol_time(None) for _ in range(lanes)]
        while True:
            await falling
            if app_word is not None:
                self.app_tlps.take(int(app_word.value))
            self.cycles += 1
            if not int(self.word_clock.value):
                continue
            word = int(tx_word.value)
            sent = [None if word & idle_flag else word >> SYMBOL_BITS * lane & SYMBOL_MASK
                    for lane in range(lanes)]
            if self.corrupt_tlps:
                sent = [None if symbol is None else self._corrupt(symbol) for symbol in sent]
            if self.tx_log is not None:
                self.tx_log.extend(sent)
            if self.silent or all(symbol is None for symbol in back):
                rx_word.value = 0
            else:
                value = idle_flag  # present
                for lane, symbol in enumerate(back):
                    value |= (symbol or 0) << SYMBOL_BITS * lane
                rx_word.value = value
            back = [port.symbol_time(symbol) for symbol in sent]

    def _corrupt(self, symbol: int) -> int:
        if symbol == KCode.STP:
            self._countdown = self.CORRUPTED_SYMBOL
        elif self._countdown:
            self._countdown -= 1
            if not self._countdown:
                self.corrupt_tlps -= 1
                return symbol ^ 1
        return symbol

    def output(self, name: str) -> int:
        """One of the endpoint's outputs (:data:`~.endpoint_model.OUTPUTS`) now."""
        return int(getattr(self.dut, self.prefix + name).value)

    async def until_dl_active(self, *, cycles: int = 20_000) -> int:
        """Wait until the endpoint and the root port are both DL_Active; the symbol times
        since reset. Raises ``TimeoutError`` after ``cycles``."""
        clk = self.clock
        for _ in range(cycles):
            if self.output("dl_active") and self.port.fc_state[0].initialized.is_set():
                return self.cycles
            await ClockCycles(clk, 1)
        raise TimeoutError(f"not DL_Active after {cycles} symbol times; partner "
                           f"{self.port.partner.state}, endpoint dl_active "
                           f"{self.output('dl_active')}")
