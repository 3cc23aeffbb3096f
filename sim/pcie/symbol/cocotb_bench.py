"""cocotbext-pcie's root complex on the soft endpoint's Verilator model, word by word.

Inside a cocotb test on :data:`~.endpoint_model.TOPLEVEL`::

    bench = await SoftEndpointBench.start(dut)   # clock, reset, the wire running
    await bench.until_dl_active()                # trained, flow control initialised both ways
    await bench.rc.enumerate(timeout=..., timeout_unit="us")
    bench.output("max_payload_size")             # the endpoint's outputs, as ints

Every clock (a word time: four symbol times, 16 ns at 2.5 GT/s) a coroutine hands the four
symbols the endpoint sent to :meth:`SymbolPort.symbol_time` (the
:class:`~.partner.RootPortPartner` under cocotbext-pcie's ``Port``) in turn and drives the
four the partner sent back on the next clock, at the falling clock edge, when the endpoint's
outputs are settled and its inputs are taken at the next rising edge: one word each way per
clock, a word of latency, as :class:`~.word_exchange.WordExchange` does in Amaranth's
simulator.
"""

from __future__ import annotations

import cocotb
from busprobe.protocol.pcie_symbols import KCode
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge
from cocotbext.pcie.core import RootComplex

from .amaranth_bench import WORD_PERIOD
from .cocotb_port import SymbolPort, park_unused_port
from .endpoint_model import APP_DATA_BITS, SYMBOL_BITS, WORD_SYMBOLS

__all__ = ["SoftEndpointBench", "attach_root_port", "reset_model", "RoutedTlps",
           "WORD_FLAG", "SYMBOL_MASK", "unpack_word", "pack_word"]

#: rx_word: symbols are on the wire; tx_word: the endpoint is in electrical idle.
WORD_FLAG = 1 << WORD_SYMBOLS * SYMBOL_BITS
SYMBOL_MASK = (1 << SYMBOL_BITS) - 1


def unpack_word(word: int) -> list[int | None]:
    """The four symbols of a ``tx_word``, lane 0 first (all None in electrical idle)."""
    if word & WORD_FLAG:
        return [None] * WORD_SYMBOLS
    return [word >> SYMBOL_BITS * lane & SYMBOL_MASK for lane in range(WORD_SYMBOLS)]


def pack_word(symbols: list[int | None]) -> int:
    """An ``rx_word`` of four symbols, lane 0 first: 0 (electrical idle) when all are None; a
    None among symbols is sent as 0."""
    if all(symbol is None for symbol in symbols):
        return 0
    value = WORD_FLAG
    for lane, symbol in enumerate(symbols):
        value |= (symbol or 0) << SYMBOL_BITS * lane
    return value


class RoutedTlps(list):
    """The TLPs the endpoint's router passed to the application (raw bytes), in order,
    assembled from the model's ``app_word`` by :meth:`take` once a clock (a DW, its wire byte
    0 in bits 7:0, then ``last``, then ``valid``)."""

    _LAST, _VALID = 1 << APP_DATA_BITS, 1 << APP_DATA_BITS + 1

    def __init__(self) -> None:
        super().__init__()
        self._bytes = bytearray()

    def take(self, app_word: int) -> None:
        if app_word & self._VALID:
            data = app_word & ((1 << APP_DATA_BITS) - 1)
            self._bytes.extend(data.to_bytes(APP_DATA_BITS // 8, "little"))
            if app_word & self._LAST:
                self.append(bytes(self._bytes))
                self._bytes.clear()


async def reset_model(dut, *, prefix: str = "", clock=None, reset=None) -> None:
    """Start the model's clock (:data:`WORD_PERIOD`) and hold it in reset for four clocks,
    the endpoint's receiver in electrical idle (and without decode errors, where the top has
    ``rx_error``) and a receiver found at the far end. ``prefix``: of the endpoint's ports in
    the top's names; ``clock``, ``reset``: the top's handles (default ``clk``, ``rst``)."""
    clock = dut.clk if clock is None else clock
    reset = dut.rst if reset is None else reset
    Clock(clock, round(WORD_PERIOD * 1e12), unit="ps", impl="gpi").start()
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
    clock, reset: the top's clock (a word a clock) and active-high reset.
    port: the :class:`SymbolPort` (``port.partner`` is the symbol-level root port).
    rc: cocotbext-pcie's ``RootComplex`` with ``port`` as its one root port.
    cycles: symbol times run since reset (four a clock).
    corrupt_tlps: the endpoint's next TLPs to reach the root port with one header bit flipped
        (a bad LCRC: the root port NAKs, the endpoint replays).
    app_tlps: the TLPs the endpoint's router passed to the application (raw bytes), in order.
    tx_log: None, or a list the endpoint's symbols are appended to, four a clock (None for
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
        self.port = SymbolPort(**partner_options)
        self.rc = RootComplex()
        attach_root_port(self.rc, self.port)
        self.cycles = 0
        self.corrupt_tlps = 0
        self.silent = False
        self._countdown = 0
        self.app_tlps = RoutedTlps()
        self.tx_log: list | None = None

    @classmethod
    async def start(cls, dut, **options) -> SoftEndpointBench:
        """Clock and reset the model, then run the wire in the background. ``options``: the
        constructor's (``prefix``: of the endpoint's ports in the top's names; ``clock``,
        ``reset``: the top's clock and reset; the partner's options)."""
        bench = cls(dut, **options)
        await reset_model(dut, prefix=bench.prefix, clock=bench.clock, reset=bench.reset)
        cocotb.start_soon(bench._run_wire())
        return bench

    async def _run_wire(self) -> None:
        """Every clock: the endpoint's four symbols to the root port in turn, the root port's
        four answers driven for the next clock."""
        port, rx_word, tx_word, app_word = self.port, self.rx_word, self.tx_word, self.app_word
        falling = FallingEdge(self.clock)
        back: list[int | None] = [port.symbol_time(None) for _ in range(WORD_SYMBOLS)]
        while True:
            await falling
            if app_word is not None:
                self.app_tlps.take(int(app_word.value))
            self.cycles += WORD_SYMBOLS
            sent = unpack_word(int(tx_word.value))
            if self.corrupt_tlps:
                sent = [None if symbol is None else self._corrupt(symbol) for symbol in sent]
            if self.tx_log is not None:
                self.tx_log.extend(sent)
            rx_word.value = 0 if self.silent else pack_word(back)
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

    async def wait(self, cycles: int) -> None:
        """Let ``cycles`` clocks of the model pass."""
        await ClockCycles(self.clock, cycles)

    def output(self, name: str) -> int:
        """One of the endpoint's outputs (:data:`~.endpoint_model.OUTPUTS`) now."""
        return int(getattr(self.dut, self.prefix + name).value)

    async def until_dl_active(self, *, cycles: int = 20_000) -> int:
        """Wait until the endpoint and the root port are both DL_Active; the symbol times
        since reset. Raises ``TimeoutError`` after ``cycles`` symbol times."""
        clk = self.clock
        for _ in range(0, cycles, WORD_SYMBOLS):
            if self.output("dl_active") and self.port.fc_state[0].initialized.is_set():
                return self.cycles
            await ClockCycles(clk, 1)
        raise TimeoutError(f"not DL_Active after {cycles} symbol times; partner "
                           f"{self.port.partner.state}, endpoint dl_active "
                           f"{self.output('dl_active')}")
