"""Python side of the ULPI PHY model (``sim/hdl/ulpi_phy.sv``): whole packets in and out.

The PHY does the per-byte ULPI work inside the simulator. This driver hands it host->device
packets (one wide write: bytes, length, per-byte stall mask, start cycle) and collects captured
device->host packets (one wide read), so Python runs once per packet, never once per clock.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from busprobe.protocol import usb2_wire as wire
from cocotb.triggers import First, Timer, ValueChange

from ..clocked import ClockedDriver

__all__ = ["CLOCK_PERIOD_PS", "DevicePacket", "UlpiPhyDriver", "stall_mask"]

#: The simulator's clock needs an integer period; simulated time is counted in cycles
#: (:attr:`UlpiPhyDriver.cycle`) at exactly 60 MHz, so this rounding never shows in a figure.
CLOCK_PERIOD_PS = 16_666
MAX_BYTES = 520
#: CRC-16/USB register after an intact packet's data and CRC (§8.3.5.2).
CRC16_RESIDUE = 0xB001


def stall_mask(packet: bytes) -> int:
    """Bit ``i`` set: the PHY holds ``nxt`` low for a cycle before byte ``i`` of ``packet``.

    Every 8 bits the transmitter stuffs (§7.1.9) cost one byte time on the ULPI side; a run of
    ``L`` ones (counting the SYNC's final 1) gets ``L // 6`` stuffed zeros, after its 6th, 12th ...
    one.
    """
    starts, lengths = wire.ones_runs(packet)
    mask = 0
    stuffed = 0
    for run in np.flatnonzero(lengths >= 6):
        start, length = int(starts[run]), int(lengths[run])
        for k in range(6, length + 1, 6):
            stuffed += 1
            if stuffed % 8 == 0:
                byte = (start + k - 2) // 8  # the run's k-th one; index 0 is the SYNC bit
                if byte + 1 < len(packet):
                    mask |= 1 << (byte + 1)
    return mask


@dataclass
class DevicePacket:
    """A packet the device transmitted, as the PHY captured it.

    Attributes
    ----------
    data : bytes
        PID byte first, then fields/payload and CRC.
    start, end : int
        Cycles of the TX CMD and of the ``stp`` that ended it.
    wire_end : int
        Cycle the packet's EOP ends on the line, from its real bits (SYNC, stuffing, EOP).
    crc_ok : bool
        For a data packet: its CRC16 is intact (the PHY model checks it as the bytes pass).
    """

    data: bytes
    start: int
    end: int
    wire_end: int
    crc_ok: bool = True

    @property
    def pid(self) -> int:
        return self.data[0] & 0xF


class UlpiPhyDriver(ClockedDriver):
    """Drives the PHY model's host-side ports of ``usb2_sim_top``.

    Parameters
    ----------
    dut : cocotb handle
        The ``usb2_sim_top`` instance.
    """

    period_ps = CLOCK_PERIOD_PS

    def __init__(self, dut: object) -> None:
        super().__init__(dut)
        self._rx_request = 0
        self._tx_seen = 0
        self._shapes: dict[bytes, tuple[int, int]] = {}

    async def start(self) -> None:
        """Start the clock and hold the design in reset for a few cycles."""
        await self.start_together([self])

    @staticmethod
    async def start_together(phys: list[UlpiPhyDriver]) -> None:
        """Start the clock ``phys`` share (the first one's) and hold their designs in reset."""
        phys[0]._start_clock()
        phys[0].dut.rst.value = 1
        for phy in phys:
            phy._idle_inputs()
        await phys[0]._release_reset()
        for phy in phys:
            phy._rx_request = 0
            phy._tx_seen = int(phy.dut.tx_count.value)

    def _idle_inputs(self) -> None:
        dut = self.dut
        dut.host_linestate.value = wire_linestate("J")
        dut.rx_request.value = 0
        dut.rx_len.value = 0
        dut.rx_start_at.value = 0
        dut.rx_stall.value = 0
        dut.rx_data.value = 0

    @property
    def func_ctrl(self) -> int:
        return int(self.dut.func_ctrl.value)

    def set_linestate(self, state: int) -> None:
        self.dut.host_linestate.value = state

    async def idle(self) -> None:
        """Wait until the PHY has delivered every queued host packet."""
        while int(self.dut.rx_count.value) != self._rx_request & 0xFFFF_FFFF:
            await ValueChange(self.dut.rx_count)

    async def send(self, packet: bytes, start_at: int) -> int:
        """Queue ``packet`` (PID first) to start on the wire at cycle ``start_at``.

        Returns the cycle its EOP ends on the line (SYNC + stuffed bits + EOP from
        :mod:`busprobe.protocol.usb2_wire`). Waits first if the PHY still holds an earlier packet.
        """
        if len(packet) > MAX_BYTES:
            raise ValueError(f"packet of {len(packet)} bytes exceeds the PHY model's {MAX_BYTES}")
        await self.idle()
        shape = self._shapes.get(packet)
        if shape is None:
            sof = (packet[0] & 0xF) == wire.Pid.SOF
            shape = (stall_mask(packet),
                     wire.bits_to_cycles(wire.packet_bits_of(packet, sof=sof)))
            if len(packet) <= 3:  # tokens, SOFs, handshakes repeat: remember them
                self._shapes[packet] = shape
        dut = self.dut
        dut.rx_data.value = int.from_bytes(packet, "little")
        dut.rx_len.value = len(packet)
        dut.rx_stall.value = shape[0]
        dut.rx_start_at.value = start_at
        self._rx_request += 1
        dut.rx_request.value = self._rx_request & 0xFFFF_FFFF
        return start_at + shape[1]

    async def receive(self, timeout_cycles: int) -> DevicePacket | None:
        """The next packet the device transmits, or None if none started in ``timeout_cycles``."""
        dut = self.dut
        if int(dut.tx_count.value) == self._tx_seen:
            timer = Timer(max(timeout_cycles, 1) * CLOCK_PERIOD_PS, "ps")
            while int(dut.tx_count.value) == self._tx_seen:
                fired = await First(ValueChange(dut.tx_count), timer)
                if fired is timer and int(dut.tx_count.value) == self._tx_seen:
                    if not int(dut.tx_busy.value):
                        return None
                    # The answer started in time; a long data packet ends later.
                    await ValueChange(dut.tx_count)
        self._tx_seen = int(dut.tx_count.value)
        length = int(dut.tx_len.value)
        raw = dut.tx_data._handle.get_signal_val_binstr()  # one wide read; LogicArray is slower
        value = int(raw[len(raw) - 8 * length:], 2) if length else 0
        data = value.to_bytes(length, "little")
        start = int(dut.tx_start_cycle.value)
        end = int(dut.tx_end_cycle.value)
        # Line time from the packet's real bits; the PHY counted the stuffing as it serialised.
        bits = wire.SYNC_BITS + 8 * length + int(dut.tx_stuffed.value) + wire.EOP_BITS
        wire_end = max(end, start + wire.bits_to_cycles(bits))
        crc_ok = int(dut.tx_crc16.value) == CRC16_RESIDUE
        return DevicePacket(data, start, end, wire_end, crc_ok)

    def discard_received(self) -> None:
        """Forget any device packet captured so far (after a reset)."""
        self._tx_seen = int(self.dut.tx_count.value)


def wire_linestate(name: str) -> int:
    """UTMI LineState encoding (UTMI 1.05 Table 4): bit 0 D+, bit 1 D-."""
    return {"SE0": 0b00, "J": 0b01, "K": 0b10}[name]
