"""A cocotbext-pcie endpoint whose application side is a TLP beat stream in the DUT.

:class:`TlpStreamEndpoint` is a :class:`cocotbext.pcie.core.Endpoint` (config space, BARs, MSI
capability modelled by cocotbext-pcie) that hands every request and completion it receives to the
DUT as beats, and turns the DUT's beats back into :class:`~cocotbext.pcie.core.tlp.Tlp` objects it
sends upstream. It is the "hard IP" of a soft PCIe core under test: it knows nothing of the core.

Beat format (the Xilinx 7-series 64/128-bit AXI-Stream convention, which LitePCIe's PHYs use):
the TLP as a sequence of DWs, ``data_width // 32`` per beat, the first in the low bits; each DW is
the big-endian value of its four wire bytes; ``be`` has a bit per byte of valid DWs; ``first`` and
``last`` mark the packet's beats. Signals (``prefix`` + name; directions seen from the DUT)::

    rx_valid, rx_ready, rx_first, rx_last, rx_dat, rx_be    TLPs to the DUT (input stream)
    tx_valid, tx_ready, tx_first, tx_last, tx_dat, tx_be    TLPs from the DUT (output stream)
    msi_valid, msi_ready, msi_dat                           optional: MSI request, vector in dat
    req_id, max_payload_size, max_request_size,             optional: driven from the modelled
    bus_master_enable, msi_enable, device_control           config space (sizes in bytes)
    link_up, ltssm, link_rate, link_width                   optional: the link's state, driven by
                                                            whoever models training (low until)

Flow control is real: the credits of a received TLP return when its last beat enters the DUT, and
the DUT's ``tx_ready`` drops while ``tx_buffer`` TLPs wait for the link (as a hard IP's transmit
buffer does). Stall testing in the cocotbext style: :meth:`set_rx_pause_generator` idles the RX
stream, :meth:`set_tx_pause_generator` drops ``tx_ready``, both from any iterable of booleans.
Received/sent TLPs can be observed with :attr:`on_rx_tlp` / :attr:`on_tx_tlp` callbacks.

Fault injection (:mod:`busprobe.sim.pcie.faults`) happens here, where the link hands TLPs to the
core: :attr:`rx_filter` may replace each TLP for the DUT by any number of TLPs or
:class:`RawPacket` s (beats no cocotbext :class:`Tlp` can hold: truncated, overlong, fragments),
and :meth:`inject` queues one at any time. It cannot happen in the link itself: cocotbext-pcie
asserts every TLP's consistency (``Tlp.check``) on each hop and routes completions by their
Requester ID, so a malformed or misrouted TLP only exists below it, at the PHY stream.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import cocotb
from cocotb.queue import Queue
from cocotb.triggers import Event, FallingEdge, First, RisingEdge, ValueChange
from cocotbext.pcie.core import Endpoint
from cocotbext.pcie.core.caps import MsiCapability
from cocotbext.pcie.core.tlp import Tlp, TlpType

__all__ = ["TlpStreamEndpoint", "RawPacket", "tlp_to_beats", "beats_to_tlp"]

_TO_DUT = {TlpType.MEM_READ, TlpType.MEM_READ_64, TlpType.MEM_WRITE, TlpType.MEM_WRITE_64,
           TlpType.IO_READ, TlpType.IO_WRITE, TlpType.CPL, TlpType.CPL_DATA,
           TlpType.CPL_LOCKED, TlpType.CPL_LOCKED_DATA}


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
    return Tlp.unpack(bytes(raw))


@dataclass
class RawPacket:
    """Beats handed to the DUT exactly as given (``last`` on the final one): a TLP the link
    layer could not carry, for fault injection. It holds no flow-control credits."""

    beats: list[tuple[int, int]]

    def release_fc(self) -> None:
        pass


class TlpStreamEndpoint(Endpoint):
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
        Signal name prefix (``"pcie_sim_"`` finds ``pcie_sim_rx_valid``, ...).
    data_width : int
        Width of ``rx_dat``/``tx_dat`` (a multiple of 32).
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
        self.clock = clock
        self.data_width = data_width
        self.tx_buffer = tx_buffer
        self._sig = {}
        for name in ("rx_valid", "rx_ready", "rx_first", "rx_last", "rx_dat", "rx_be",
                     "tx_valid", "tx_ready", "tx_first", "tx_last", "tx_dat", "tx_be",
                     "msi_valid", "msi_ready", "msi_dat", "req_id", "max_payload_size",
                     "max_request_size", "bus_master_enable", "msi_enable", "device_control",
                     "link_up", "ltssm", "link_rate", "link_width"):
            handle = getattr(dut, prefix + name, None)
            if handle is not None:
                self._sig[name] = handle
        missing = {"rx_valid", "rx_ready", "rx_last", "rx_dat", "tx_valid", "tx_ready",
                   "tx_last", "tx_dat"} - set(self._sig)
        if missing:
            raise ValueError(f"DUT has no {', '.join(sorted(prefix + m for m in missing))}")

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
        self._rx_queue: deque[Tlp | RawPacket] = deque()
        self._rx_event = Event()
        self._tx_queue: Queue[Tlp] = Queue()
        self._tx_pending = 0
        self._rx_busy = False
        self._rx_pause: Iterator[bool] | None = None
        self._tx_pause: Iterator[bool] | None = None
        for name in ("rx_valid", "rx_first", "rx_last", "msi_ready", *self.LINK_SIGNALS):
            if name in self._sig:
                self._sig[name].value = 0
        #: The link-state signals the DUT has (for :func:`busprobe.sim.pcie.link_training.train`).
        self.link_signals = {name: self._sig[name] for name in self.LINK_SIGNALS
                             if name in self._sig}
        self._sig["tx_ready"].value = 0
        self._drive_config()
        cocotb.start_soon(self._run_stream())
        cocotb.start_soon(self._run_transmit())
        if "msi_valid" in self._sig:
            cocotb.start_soon(self._run_msi())

    # Stall insertion -----------------------------------------------------------------------------

    def set_rx_pause_generator(self, generator: Iterable[bool] | None = None) -> None:
        """Hold the RX stream idle on cycles where ``generator`` yields true."""
        self._rx_pause = iter(generator) if generator is not None else None

    def set_tx_pause_generator(self, generator: Iterable[bool] | None = None) -> None:
        """Drop ``tx_ready`` on cycles where ``generator`` yields true."""
        self._tx_pause = iter(generator) if generator is not None else None

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
        # the DUT has taken the TLP (in _run_stream), not here.
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
        self._rx_event.set()

    def rx_idle(self) -> bool:
        """Nothing waits for the DUT and no packet is being handed over."""
        return not self._rx_queue and not self._rx_busy

    async def _run_stream(self) -> None:
        # RX inputs are driven after a rising edge and both streams are sampled at the falling
        # edge that follows: the values seen there are the ones the next rising edge acts on,
        # whether the simulator shows pre- or post-edge values after a RisingEdge (Verilator:
        # post). tx_ready is driven at the falling edge itself (a stream's valid and data must
        # not depend on its ready), so a TX-only stream costs one wake-up per clock, not two.
        sig = self._sig
        rx_valid, rx_ready, rx_last, rx_dat = (sig["rx_valid"], sig["rx_ready"], sig["rx_last"],
                                               sig["rx_dat"])
        rx_first, rx_be = sig.get("rx_first"), sig.get("rx_be")
        tx_valid, tx_ready, tx_last, tx_dat = (sig["tx_valid"], sig["tx_ready"], sig["tx_last"],
                                               sig["tx_dat"])
        tx_be = sig.get("tx_be")
        full_be = (1 << (self.data_width // 8)) - 1
        rising, falling = RisingEdge(self.clock), FallingEdge(self.clock)
        rx_beats: list[tuple[int, int]] = []  # beats of the TLP being driven
        rx_tlp: Tlp | None = None
        rx_index = 0
        driving = False  # rx_valid is high
        rx_fire = False  # the beat on rx_* is taken at the next rising edge
        ready = False  # value driven on tx_ready
        tx_beats: list[tuple[int, int]] = []
        while True:
            self._rx_busy = rx_tlp is not None
            rx_busy = driving or rx_fire or rx_tlp is not None or bool(self._rx_queue)
            if not (rx_busy or tx_beats or int(tx_valid.value)):
                self._rx_event.clear()
                await First(self._rx_event.wait(), ValueChange(tx_valid))
                # Always sample at the coming falling edge first; the RX stream starts a cycle
                # later. A coroutine that queues a TLP on a rising edge may run before the
                # simulator has evaluated that edge, so tx_valid can read 0 here and still rise
                # at this edge: awaiting the next rising edge would then lose the DUT's first
                # beat (the fault fuzz caught a memory write leaving without its header).
                rx_busy = False
            if rx_busy:
                await rising
                if rx_fire:
                    rx_fire = False
                    rx_index += 1
                    if rx_index == len(rx_beats):
                        rx_tlp.release_fc()
                        rx_tlp, rx_beats = None, []
                if rx_tlp is None and self._rx_queue:
                    rx_tlp = self._rx_queue.popleft()
                    rx_beats = (rx_tlp.beats if isinstance(rx_tlp, RawPacket)
                                else tlp_to_beats(rx_tlp, self.data_width))
                    rx_index = 0
                    self.log.debug("to DUT: %r", rx_tlp)
                    if self.on_rx_tlp is not None:
                        self.on_rx_tlp(rx_tlp)
                pause = self._rx_pause is not None and next(self._rx_pause)
                if rx_tlp is not None and not pause:
                    dat, be = rx_beats[rx_index]
                    rx_dat.value = dat
                    if rx_be is not None:
                        rx_be.value = be
                    if rx_first is not None:
                        rx_first.value = int(rx_index == 0)
                    rx_last.value = int(rx_index == len(rx_beats) - 1)
                    if not driving:
                        rx_valid.value = 1
                        driving = True
                elif driving:
                    rx_valid.value = 0
                    driving = False
            await falling
            rx_fire = driving and bool(int(rx_ready.value))
            tx_pause = self._tx_pause is not None and next(self._tx_pause)
            want = self._tx_pending < self.tx_buffer and not tx_pause
            if want != ready:
                tx_ready.value = int(want)
                ready = want
            if ready and int(tx_valid.value):  # taken at the next rising edge
                be = int(tx_be.value) if tx_be is not None else full_be
                tx_beats.append((int(tx_dat.value), be))
                if int(tx_last.value):
                    tlp = beats_to_tlp(tx_beats, self.data_width)
                    self.log.debug("from DUT: %r", tlp)
                    tx_beats = []
                    self._tx_pending += 1
                    self._tx_queue.put_nowait(tlp)

    async def _run_transmit(self) -> None:
        while True:
            tlp = await self._tx_queue.get()
            if self.on_tx_tlp is not None:
                self.on_tx_tlp(tlp)
            await self.send(tlp)
            self._tx_pending -= 1

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
