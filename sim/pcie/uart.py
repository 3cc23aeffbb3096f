"""The simulated SoC's console: LiteX's simulation UART PHY (``RS232PHYModel``) seen from cocotb.

On the board the UART's bytes cross an RS-232 line at 115200 baud (87 us a byte, 10,850 core
cycles); simulated that way a banner alone would cost seconds of wall time. The simulation top
uses LiteX's ``RS232PHYModel`` instead (``gateware/pcie/sim_top.py``): the same UART core, FIFOs
and CSRs, with the line replaced by a byte stream, one byte per handshake. Signals (``prefix``
+ name, directions seen from the DUT)::

    source_valid, source_ready, source_data[8]   bytes the firmware sends (its TX)
    sink_valid, sink_ready, sink_data[8]         bytes the firmware receives (its RX)

Python wakes per byte, never per idle clock: TX is sampled at falling edges only while
``source_valid`` is high (``source_ready`` stays high: the console never holds the firmware
back), and a value change wakes it when the next byte comes.
"""

from __future__ import annotations

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import Event, FallingEdge, First, Timer, ValueChange

__all__ = ["UartStream"]


class UartStream:
    """The console's far end: every byte the firmware sends is kept until read.

    Parameters
    ----------
    dut
        The simulator handle holding the signals.
    clock
        The clock of the UART's stream.
    prefix : str
        Signal name prefix (``"serial_"``).
    """

    def __init__(self, dut, clock, prefix: str = "serial_") -> None:
        self.clock = clock
        self._tx_valid = getattr(dut, f"{prefix}source_valid")
        self._tx_data = getattr(dut, f"{prefix}source_data")
        self._rx_valid = getattr(dut, f"{prefix}sink_valid")
        self._rx_ready = getattr(dut, f"{prefix}sink_ready")
        self._rx_data = getattr(dut, f"{prefix}sink_data")
        getattr(dut, f"{prefix}source_ready").value = 1
        self._rx_valid.value = 0
        #: Bytes the firmware sent that nobody read yet.
        self.received = bytearray()
        self._arrived = Event()
        cocotb.start_soon(self._collect())

    async def _collect(self) -> None:
        falling = FallingEdge(self.clock)
        while True:
            await falling
            # Seen at a falling edge with ready high: taken at the next rising edge.
            if int(self._tx_valid.value):
                self.received.append(int(self._tx_data.value))
                self._arrived.set()
                continue
            await ValueChange(self._tx_valid)

    async def send(self, data: bytes) -> None:
        """Hand ``data`` to the firmware's RX FIFO, one byte per cycle it is ready."""
        falling = FallingEdge(self.clock)
        await falling
        for byte in data:
            self._rx_data.value = byte
            self._rx_valid.value = 1
            while not int(self._rx_ready.value):
                await falling
            await falling  # taken at the rising edge in between
        self._rx_valid.value = 0

    async def read_until(self, marker: bytes, timeout_s: float) -> tuple[bytes, bool]:
        """What the firmware sent up to and including ``marker`` (removed from
        :attr:`received`), and True; after ``timeout_s`` of simulated time without it,
        everything received so far and False."""
        deadline = get_sim_time("ps") + max(1, round(timeout_s * 1e12))
        while (end := self.received.find(marker)) < 0:
            left = deadline - get_sim_time("ps")
            if left <= 0:
                data = bytes(self.received)
                self.received.clear()
                return data, False
            self._arrived.clear()
            await First(self._arrived.wait(), Timer(left, unit="ps"))
        end += len(marker)
        data = bytes(self.received[:end])
        del self.received[:end]
        return data, True
