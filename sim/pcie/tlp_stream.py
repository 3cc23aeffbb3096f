"""A cocotbext-pcie endpoint whose application side is a TLP beat stream in the DUT.

:class:`TlpStreamEndpoint` is a :class:`cocotbext.pcie.core.Endpoint` (config space, BARs, MSI
capability modelled by cocotbext-pcie) that hands every request and completion it receives to the
DUT as beats, and turns the DUT's beats back into :class:`~cocotbext.pcie.core.tlp.Tlp` objects it
sends upstream. It is the "hard IP" of a soft PCIe core under test: it knows nothing of the core.
Those TLPs are :class:`~.tlp_speed.FastTlp` s and the endpoint matches TLPs by
:class:`~.route_speed.FastMatch` (simulation speed, DESIGN §5.3).

Beat format (the Xilinx 7-series 64/128-bit AXI-Stream convention, which LitePCIe's PHYs use):
the TLP as a sequence of DWs, ``data_width // 32`` per beat, the first in the low bits; each DW is
the big-endian value of its four wire bytes; ``be`` has a bit per byte of valid DWs; ``first`` and
``last`` mark the packet's beats.

The beats are paced in HDL: the DUT's streams (``rx_*``, ``tx_*``) end on ``sim/hdl/
tlp_bridge.sv``, which this model hands whole TLPs and takes whole TLPs from, so it wakes once
per TLP, not once per clock (a per-clock wake-up cost the simulation half its speed, issue 30;
the bridge's header says what it does at which edge). Signals (``prefix`` + name; the bench top,
:mod:`busprobe.sim.pcie.bench_top`, puts a bridge on every core)::

    rxq_dat, rxq_be, rxq_beats, rxq_pushed, rxq_loaded,     TLPs to the DUT, one waiting at a
    rxq_done, rxq_pause                                     time; pause idles the stream a cycle
    txq_dat, txq_be, txq_beats, txq_taken, txq_released,    TLPs from the DUT; ready drops while
    txq_buffer, txq_pause                                   txq_buffer TLPs wait for the link
    msi_valid, msi_ready, msi_dat                           optional: MSI request, vector in dat
    req_id, max_payload_size, max_request_size,             optional: driven from the modelled
    bus_master_enable, msi_enable, device_control           config space (sizes in bytes)
    link_up, ltssm, link_rate, link_width                   optional: the link's state, driven by
                                                            whoever models training (low until)

Flow control is real: the credits of a received TLP return when its last beat enters the DUT, and
the DUT's ``tx_ready`` drops while ``tx_buffer`` TLPs wait for the link (as a hard IP's transmit
buffer does). Stall testing in the cocotbext style: :meth:`set_rx_pause_generator` idles the RX
stream, :meth:`set_tx_pause_generator` drops ``tx_ready``, both from any iterable of booleans
(only then does the model wake every clock). Received/sent TLPs can be observed with
:attr:`on_rx_tlp` / :attr:`on_tx_tlp` callbacks.

Fault injection (:mod:`busprobe.sim.pcie.faults`) happens here, where the link hands TLPs to the
core: :attr:`rx_filter` may replace each TLP for the DUT by any number of TLPs or
:class:`RawPacket` s (beats no cocotbext :class:`Tlp` can hold: truncated, overlong, fragments),
and :meth:`inject` queues one at any time. It cannot happen in the link itself: cocotbext-pcie
asserts every TLP's consistency (``Tlp.check``) on each hop and routes completions by their
Requester ID, so a malformed or misrouted TLP only exists below it, at the PHY stream.
"""

from __future__ import annotations

import logging
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import cocotb
from cocotb.queue import Queue
from cocotb.triggers import FallingEdge, First, RisingEdge, ValueChange
from cocotbext.pcie.core import Endpoint
from cocotbext.pcie.core.caps import MsiCapability
from cocotbext.pcie.core.tlp import Tlp, TlpType

from .route_speed import FastMatch
from .tlp_speed import FastTlp

__all__ = ["TlpStreamEndpoint", "RawPacket", "tlp_to_beats", "beats_to_tlp", "MAX_BEATS"]

_TO_DUT = {TlpType.MEM_READ, TlpType.MEM_READ_64, TlpType.MEM_WRITE, TlpType.MEM_WRITE_64,
           TlpType.IO_READ, TlpType.IO_WRITE, TlpType.CPL, TlpType.CPL_DATA,
           TlpType.CPL_LOCKED, TlpType.CPL_LOCKED_DATA}
#: The longest packet the bridge holds (its ``MAX_BEATS``): a 4-DW header and a 512-byte
#: payload, and the 3 DWs an overlong fault adds.
MAX_BEATS = 72
_COUNT = 0xFFFF  # the bridge's TLP counters are 16 bits


def tlp_to_beats(tlp: Tlp, data_width: int = 64) -> list[tuple[int, int]]:
    """``(dat, be)`` beats of ``tlp`` in the stream format above."""
    raw = tlp.pack()
    dws = [int.from_bytes(raw[i:i + 4], "big") for i in range(0, len(raw), 4)]
    per_beat = data_width // 32
    beats = []
    for i in range(0, len(dws), per_beat):
        chunk = dws[i:i + per_beat]
        dat = sum(dw << (32 * k) for k, dw in enumerate(chunk))
        be = (1 << (4 * len(chunk))) - 1
        beats.append((dat, be))
    return beats


def beats_to_tlp(beats: Iterable[tuple[int, int]], data_width: int = 64) -> Tlp:
    """Inverse of :func:`tlp_to_beats`."""
    raw = bytearray()
    for dat, be in beats:
        for k in range(data_width // 32):
            if (be >> (4 * k)) & 0xF:
                raw += ((dat >> (32 * k)) & 0xFFFF_FFFF).to_bytes(4, "big")
    return FastTlp.unpack(bytes(raw))


def _packed(tlp: Tlp) -> tuple[int, int, int]:
    """``tlp`` as the bridge holds it: (all beats' data, all beats' byte enables, beats), the
    same beats as :func:`tlp_to_beats` gives (64-bit beats) without a Python loop per DW."""
    words = array("I", tlp.pack())
    words.byteswap()  # each DW is the big-endian value of its wire bytes
    dws = len(words)
    return int.from_bytes(words.tobytes(), "little"), (1 << (4 * dws)) - 1, (dws + 1) // 2


def _unpacked(dat: int, be: int, beats: int) -> Tlp:
    """The TLP of the first ``beats`` 64-bit beats held as by :func:`_packed` (the bridge keeps
    longer TLPs' beats above; DWs whose bytes are not enabled are left out, as
    :func:`beats_to_tlp` does)."""
    words = array("I", (dat & ((1 << (64 * beats)) - 1)).to_bytes(8 * beats, "little"))
    be &= (1 << (8 * beats)) - 1
    if be == (1 << (8 * beats - 4)) - 1:  # an odd number of DWs: the last beat's high DW
        del words[-1]
    elif be != (1 << (8 * beats)) - 1:
        words = array("I", (w for k, w in enumerate(words) if (be >> (4 * k)) & 0xF))
    words.byteswap()
    return FastTlp.unpack(words.tobytes())


@dataclass
class RawPacket:
    """Beats handed to the DUT exactly as given (``last`` on the final one): a TLP the link
    layer could not carry, for fault injection. It holds no flow-control credits."""

    beats: list[tuple[int, int]]

    def release_fc(self) -> None:
        pass


class TlpStreamEndpoint(FastMatch, Endpoint):
    LINK_SIGNALS = ("link_up", "ltssm", "link_rate", "link_width")

    """cocotbext-pcie endpoint function bridged to a TLP beat stream in the DUT.

    Attach it to a device: ``dev = Device(ep)``; ``rc.make_port().connect(dev)``.

    Parameters
    ----------
    dut
        The simulator handle holding the signals.
    clock
        The clock of the stream signals.
    prefix : str
        Signal name prefix (``"pcie_sim_"`` finds ``pcie_sim_rxq_dat``, ...).
    data_width : int
        Width of the DUT's beats (64: the bridge's).
    bar0_size : int
        Size of the memory BAR 0 (32-bit, non-prefetchable); 0 for none.
    msi_vectors : int
        MSI vectors offered (power of two, 0 for no MSI capability).
    tx_buffer : int
        TLPs from the DUT that may wait for the link before ``tx_ready`` drops.
    """

    def __init__(self, dut, clock, *, prefix: str = "", data_width: int = 64,
                 bar0_size: int = 0, msi_vectors: int = 1, tx_buffer: int = 4, **kwargs):
        super().__init__(**kwargs)
        self.log = logging.getLogger(f"cocotb.pcie.{type(self).__name__}")
        if data_width != 64:
            raise ValueError(f"the TLP bridge has 64-bit beats, not {data_width}")
        self.clock = clock
        self.data_width = data_width
        self.tx_buffer = tx_buffer
        self._sig = {}
        for name in ("rxq_dat", "rxq_be", "rxq_beats", "rxq_pushed", "rxq_loaded", "rxq_done",
                     "rxq_pause", "txq_dat", "txq_be", "txq_beats", "txq_taken", "txq_released",
                     "txq_buffer", "txq_pause",
                     "msi_valid", "msi_ready", "msi_dat", "req_id", "max_payload_size",
                     "max_request_size", "bus_master_enable", "msi_enable", "device_control",
                     *self.LINK_SIGNALS):
            handle = getattr(dut, prefix + name, None)
            if handle is not None:
                self._sig[name] = handle
        missing = {"rxq_dat", "rxq_be", "rxq_beats", "rxq_pushed", "rxq_loaded", "rxq_done",
                   "rxq_pause", "txq_dat", "txq_be", "txq_beats", "txq_taken", "txq_released",
                   "txq_buffer", "txq_pause"} - set(self._sig)
        if missing:
            raise ValueError(f"DUT has no {', '.join(sorted(prefix + m for m in missing))} "
                             "(its streams need sim/hdl/tlp_bridge.sv: see bench_top)")

        if bar0_size:
            self.configure_bar(0, bar0_size)
        if msi_vectors:
            self.msi_cap = MsiCapability()
            self.msi_cap.msi_multiple_message_capable = (msi_vectors - 1).bit_length()
            self.register_capability(self.msi_cap)
        else:
            self.msi_cap = None

        #: Called with every TLP the DUT sends, before it goes upstream.
        self.on_tx_tlp: Callable[[Tlp], None] | None = None
        #: Called with every TLP (or RawPacket) handed to the DUT.
        self.on_rx_tlp: Callable[[Tlp | RawPacket], None] | None = None
        #: Given each TLP for the DUT, returns what the DUT gets instead (in order; [] drops
        #: it). The TLP's credits return when it is taken if it is in the list, else at once.
        self.rx_filter: Callable[[Tlp], list[Tlp | RawPacket]] | None = None
        self._rx_queue: deque[Tlp | RawPacket] = deque()  # not yet given to the bridge
        self._rx_staged: Tlp | RawPacket | None = None  # in rxq_*, not yet loaded
        self._rx_in_dut: deque[Tlp | RawPacket] = deque()  # loaded, last beat not yet taken
        self._tx_queue: Queue[Tlp] = Queue()
        self._rx_pause: Iterator[bool] | None = None
        self._tx_pause: Iterator[bool] | None = None
        self._pausing = False
        for name in ("msi_ready", *self.LINK_SIGNALS):
            if name in self._sig:
                self._sig[name].value = 0
        #: The link-state signals the DUT has (for :func:`busprobe.sim.pcie.link_training.train`).
        self.link_signals = {name: self._sig[name] for name in self.LINK_SIGNALS
                             if name in self._sig}
        # The bridge's counters run on across sessions of one simulation: start from them.
        self._rx_pushed = int(self._sig["rxq_loaded"].value)
        self._tx_released = int(self._sig["txq_taken"].value)
        for name, value in (("rxq_pushed", self._rx_pushed), ("rxq_pause", 0),
                            ("txq_released", self._tx_released), ("txq_buffer", tx_buffer),
                            ("txq_pause", 0)):
            self._sig[name].value = value
        self._drive_config()
        cocotb.start_soon(self._run_to_dut())
        cocotb.start_soon(self._run_from_dut())
        cocotb.start_soon(self._run_transmit())
        if "msi_valid" in self._sig:
            cocotb.start_soon(self._run_msi())

    # Stall insertion -----------------------------------------------------------------------------

    def set_rx_pause_generator(self, generator: Iterable[bool] | None = None) -> None:
        """Hold the RX stream idle on cycles where ``generator`` yields true."""
        self._rx_pause = iter(generator) if generator is not None else None
        self._start_pauses()

    def set_tx_pause_generator(self, generator: Iterable[bool] | None = None) -> None:
        """Drop ``tx_ready`` on cycles where ``generator`` yields true."""
        self._tx_pause = iter(generator) if generator is not None else None
        self._start_pauses()

    def _start_pauses(self) -> None:
        if not self._pausing and (self._rx_pause is not None or self._tx_pause is not None):
            self._pausing = True
            cocotb.start_soon(self._run_pauses())

    async def _run_pauses(self) -> None:
        # Each value is written half a clock before the edge that samples it (rxq_pause: the
        # rising edge, which drives the RX beat; txq_pause: the falling edge, which drives
        # tx_ready), one value per clock.
        rx_pause, tx_pause = self._sig["rxq_pause"], self._sig["txq_pause"]
        rising, falling = RisingEdge(self.clock), FallingEdge(self.clock)
        while self._rx_pause is not None or self._tx_pause is not None:
            await falling
            rx_pause.value = int(bool(self._rx_pause is not None and next(self._rx_pause)))
            await rising
            tx_pause.value = int(bool(self._tx_pause is not None and next(self._tx_pause)))
        rx_pause.value = 0
        tx_pause.value = 0
        self._pausing = False

    # Config space to DUT ---------------------------------------------------------------------

    async def write_config_register(self, reg, data, mask):
        await super().write_config_register(reg, data, mask)
        self._drive_config()

    def _drive_config(self) -> None:
        values = {
            "req_id": int(self.pcie_id),
            "max_payload_size": 128 << self.pcie_cap.max_payload_size,
            "max_request_size": 128 << self.pcie_cap.max_read_request_size,
            "bus_master_enable": int(self.bus_master_enable),
            "msi_enable": int(bool(self.msi_cap and self.msi_cap.msi_enable)),
            # Device Control as far as it is modelled: MPS (bits 5-7) and MRRS (12-14).
            "device_control": (self.pcie_cap.max_payload_size << 5
                               | self.pcie_cap.max_read_request_size << 12),
        }
        for name, value in values.items():
            if name in self._sig:
                self._sig[name].value = value

    # Link to DUT -----------------------------------------------------------------------------

    async def handle_tlp(self, tlp):
        # Everything for the function's application goes to the DUT; credits are returned when
        # the DUT has taken the TLP (in _run_to_dut), not here.
        if tlp.fmt_type not in _TO_DUT:
            await super().handle_tlp(tlp)
            return
        if self.rx_filter is None:
            self.inject(tlp)
            return
        replacements = self.rx_filter(tlp)
        if not any(item is tlp for item in replacements):
            tlp.release_fc()
        for item in replacements:
            self.inject(item)

    def inject(self, item: Tlp | RawPacket) -> None:
        """Queue ``item`` for the DUT behind what is already waiting."""
        self._rx_queue.append(item)
        self._stage()

    def rx_idle(self) -> bool:
        """Nothing waits for the DUT and no packet is being handed over."""
        return not self._rx_queue and self._rx_staged is None and not self._rx_in_dut

    def _stage(self) -> None:
        """Write the next waiting packet into the bridge if it has room."""
        if self._rx_staged is not None or not self._rx_queue:
            return
        item = self._rx_queue.popleft()
        if isinstance(item, RawPacket):
            beats = len(item.beats)
            dat = sum(d << (64 * k) for k, (d, _) in enumerate(item.beats))
            be = sum(b << (8 * k) for k, (_, b) in enumerate(item.beats))
        else:
            dat, be, beats = _packed(item)
        if not 0 < beats <= MAX_BEATS:
            raise ValueError(f"a packet of {beats} beats for the DUT: the bridge holds 1 to "
                             f"{MAX_BEATS}")
        sig = self._sig
        sig["rxq_dat"].value = dat
        sig["rxq_be"].value = be
        sig["rxq_beats"].value = beats
        self._rx_pushed = (self._rx_pushed + 1) & _COUNT
        sig["rxq_pushed"].value = self._rx_pushed
        self._rx_staged = item

    async def _run_to_dut(self) -> None:
        # The bridge counts each packet it loads (the next may be written) and each whose last
        # beat the DUT took (its credits return), at the rising edge where that happened.
        loaded_signal, done_signal = self._sig["rxq_loaded"], self._sig["rxq_done"]
        loaded, done = int(loaded_signal.value), int(done_signal.value)
        while True:
            await First(ValueChange(loaded_signal), ValueChange(done_signal))
            now = int(done_signal.value)
            while done != now:
                done = (done + 1) & _COUNT
                self._rx_in_dut.popleft().release_fc()
            now = int(loaded_signal.value)
            while loaded != now:
                loaded = (loaded + 1) & _COUNT
                item, self._rx_staged = self._rx_staged, None
                self._rx_in_dut.append(item)
                self.log.debug("to DUT: %r", item)
                if self.on_rx_tlp is not None:
                    self.on_rx_tlp(item)
                self._stage()

    async def _run_from_dut(self) -> None:
        # The bridge holds the TLP whose last beat it took until the next falling edge: read it
        # in the time step its count changed.
        sig = self._sig
        taken_signal, beats_signal = sig["txq_taken"], sig["txq_beats"]
        dat_signal, be_signal = sig["txq_dat"], sig["txq_be"]
        taken = int(taken_signal.value)
        while True:
            await ValueChange(taken_signal)
            now = int(taken_signal.value)
            if now != (taken + 1) & _COUNT:
                raise RuntimeError(f"the TLP bridge took {(now - taken) & _COUNT} TLPs in one "
                                   "step; only the last can be read")
            taken = now
            tlp = _unpacked(dat_signal.value.to_unsigned(), be_signal.value.to_unsigned(),
                            int(beats_signal.value))
            self.log.debug("from DUT: %r", tlp)
            self._tx_queue.put_nowait(tlp)

    async def _run_transmit(self) -> None:
        released = self._sig["txq_released"]
        while True:
            tlp = await self._tx_queue.get()
            if self.on_tx_tlp is not None:
                self.on_tx_tlp(tlp)
            await self.send(tlp)
            self._tx_released = (self._tx_released + 1) & _COUNT
            released.value = self._tx_released

    async def _run_msi(self) -> None:
        valid, ready, dat = self._sig["msi_valid"], self._sig["msi_ready"], self._sig["msi_dat"]
        clock_edge = RisingEdge(self.clock)
        while True:
            if not int(valid.value):
                await ValueChange(valid)
                continue
            vector = int(dat.value)  # stable while valid is high
            ready.value = 1
            await clock_edge
            await clock_edge  # valid and ready were both high on at least one edge
            ready.value = 0
            if self.msi_cap is not None and self.msi_cap.msi_enable:
                await self.msi_cap.issue_msi_interrupt(vector)
            else:
                self.log.warning("DUT requested MSI %d while MSI is disabled", vector)
            await clock_edge
