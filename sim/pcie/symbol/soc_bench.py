"""cocotbext-pcie's root complex on busprobe's PCIe SoC over the soft endpoint, symbol by
symbol (model: :mod:`.soc_model`).

Inside a cocotb test on :data:`~.soc_model.TOPLEVEL`::

    host = await SoftSocHost.start(dut, mps=256, mrrs=512)  # trained, enumerated, BAR0 on
    await host.read32(proto.csr("busprobe_magic"))          # BAR0, as PcieTestbench's
    regs = DmaRegisters(host)                                # the DMA helpers run on it
    buf = host.alloc(65536)                                  # host memory for DMA
    host.msi_count                                           # MSIs the root complex took

It gives what :class:`~busprobe.sim.pcie.dma_regs.DmaRegisters` needs of a bench
(``read32``/``write32``, ``wait_cycles``, ``now``, ``rc``), over
:class:`~.cocotb_bench.SoftEndpointBench` (the wire, the :class:`~.cocotb_port.SymbolPort`,
the root complex). :meth:`SoftSocHost.over` takes any bench with the same small interface
(``rc``, ``port``, ``cycles``, ``until_dl_active``, ``wait``) once its link is up: the SoC's
gate-level netlist runs under :class:`~.dcu_wire.DcuBench`::

    bench = await DcuBench.start(dut, leds=SOC_LEDS, link=1, lane=0)
    await bench.until_dl_active()
    host = await SoftSocHost.over(bench, mps=256, mrrs=512)
"""

from __future__ import annotations

from busprobe.protocol.pci_config import encode_size
from busprobe.protocol.pcie_ltssm import state_name, unpack_link_status
from busprobe.protocol.pcie_symbols import KCode
from busprobe.transport import DeviceNotFound
from cocotb.simtime import get_sim_time
from cocotbext.pcie.core.utils import PcieId

from ..testbench import HostBuffer
from .amaranth_bench import SYMBOL_PERIOD
from .cocotb_bench import SoftEndpointBench
from .soc_model import PREFIX

__all__ = ["SoftSocHost", "ENDPOINT", "TIMEOUT_US", "lane_census", "LINK_UP_SYMBOLS"]

#: The endpoint behind the root complex's first root port.
ENDPOINT = PcieId(1, 0, 0)
#: Completion timeout for the root complex's requests (the spec's low end, as the endpoint
#: tests use: a request may queue behind a 256-byte TLP, an ACK, an UpdateFC and a SKP set).
TIMEOUT_US = 50
#: Symbol times the link may take to reach DL_Active (80 us; it takes about a tenth of that
#: with the bench's LTSSM timing).
LINK_UP_SYMBOLS = 20_000


class SoftSocHost:
    """The root complex's side of the SoC bench.

    Attributes
    ----------
    bench: SoftEndpointBench or DcuBench
        The wire, the root port (``bench.port``), ``bench.cycles`` (the bench's clocks since
        reset: symbol times on the RTL's, DCU clocks of two symbol times on the netlist's).
    rc: the root complex; function: the endpoint's function as the root complex found it.
    msi_count: int
        MSIs received (the SoC's one vector).
    """

    def __init__(self, bench) -> None:
        self.bench = bench
        self.dut = bench.dut
        self.rc = bench.rc
        self.function = None
        self.bar0 = None
        self.msi_count = 0
        self.enumerated_at = 0

    @classmethod
    async def start(cls, dut, *, mps: int, mrrs: int, silent: bool = False) -> SoftSocHost:
        """Reset, train, enumerate, then as a driver: Memory Space, Bus Master, MSI, the
        sizes in Device Control (and the root complex's own MPS for its completions).
        ``silent``: no root port on the lane (no receiver, nothing heard). Raises
        :class:`~busprobe.transport.DeviceNotFound` naming the LTSSM's state when the link is
        not up within :data:`LINK_UP_SYMBOLS`."""
        bench = await SoftEndpointBench.start(dut, prefix=PREFIX, clock="sys_clk",
                                              reset="sys_rst", link=1, lane=0)
        if silent:
            bench.silent = True
            getattr(dut, f"{PREFIX}receiver_detected").value = 0
        try:
            await bench.until_dl_active(cycles=LINK_UP_SYMBOLS)
        except TimeoutError:
            state = state_name(unpack_link_status(bench.output("status")).state)
            micros = LINK_UP_SYMBOLS * SYMBOL_PERIOD * 1e6
            raise DeviceNotFound(f"link not up: LTSSM in {state} after {micros:.0f} µs") \
                from None
        return await cls.over(bench, mps=mps, mrrs=mrrs)

    @classmethod
    async def over(cls, bench, *, mps: int, mrrs: int) -> SoftSocHost:
        """The host over ``bench``, whose link is up (DL_Active): enumerate, then as a driver
        (see :meth:`start`)."""
        host = cls(bench)
        await host.rc.enumerate(timeout=TIMEOUT_US, timeout_unit="us")
        host.enumerated_at = bench.cycles
        function = host.function = host.rc.find_device(ENDPOINT)
        if function is None:
            raise RuntimeError("enumeration did not find the soft endpoint")
        await function.enable_device()
        await function.set_master()
        await host.set_mps(mps)
        await host.set_mrrs(mrrs)
        assert await function.alloc_irq_vectors(1, 1) == 1
        function.request_irq(0, host._count_msi)
        host.bar0 = function.bar_window[0]
        return host

    async def set_mps(self, mps: int) -> None:
        """Program MPS in Device Control, and the root complex's completions to it."""
        await self.function.set_mps(encode_size(mps))
        self.rc.max_payload_size = encode_size(mps)

    async def set_mrrs(self, mrrs: int) -> None:
        await self.function.set_readrq(encode_size(mrrs))

    async def _count_msi(self) -> None:
        self.msi_count += 1

    async def read32(self, offset: int) -> int:
        return await self.bar0.read_dword(offset, timeout=TIMEOUT_US, timeout_unit="us")

    async def write32(self, offset: int, value: int) -> None:
        await self.bar0.write_dword(offset, value & 0xFFFF_FFFF)

    def alloc(self, size: int) -> HostBuffer:
        """Host memory for DMA (:meth:`HostBuffer.alloc`)."""
        return HostBuffer.alloc(self.rc, size)

    async def wait_cycles(self, cycles: int) -> None:
        """Let ``cycles`` link clocks pass (``bench.wait``)."""
        await self.bench.wait(cycles)

    @staticmethod
    def now() -> float:
        """Simulated time in seconds."""
        return get_sim_time("ps") * 1e-12

    async def until_msi(self, count: int, *, cycles: int, step: int = 16) -> int:
        """Wait (no bus traffic) until ``count`` MSIs have arrived; ``bench.cycles`` then.
        Raises ``TimeoutError`` after ``cycles`` of them (looked at every ``step`` link
        clocks)."""
        deadline = self.bench.cycles + cycles
        while self.msi_count < count:
            if self.bench.cycles > deadline:
                raise TimeoutError(f"{self.msi_count} of {count} MSIs after {cycles} bench "
                                   "cycles")
            await self.bench.wait(step)
        return self.bench.cycles


def lane_census(symbols: list, *, burst_tlp: int = 0) -> dict[str, int]:
    """Where the symbol times of a recorded lane went (``SoftEndpointBench.tx_log``): TLP
    symbols (STP to END) and how many TLPs, DLLP symbols (SDP to END), ordered-set symbols
    (from COM: SKP sets here), logical idle, and ``idle_in_bursts``: the idle symbols between
    two TLPs of at least ``burst_tlp`` symbols with only DLLPs and ordered sets besides them
    in between, time a transmitter with such TLPs queued back to back should never lose."""
    census = dict.fromkeys(("tlp", "tlps", "dllp", "ordered_set", "idle", "idle_in_bursts"), 0)
    ends = {KCode.END, KCode.EDB}
    i, run, in_burst = 0, 0, False
    while i < len(symbols):
        symbol = symbols[i]
        if symbol == KCode.STP:
            j = i
            while j + 1 < len(symbols) and symbols[j] not in ends:
                j += 1
            census["tlp"] += j + 1 - i
            census["tlps"] += 1
            long = j + 1 - i >= burst_tlp
            if in_burst and long:
                census["idle_in_bursts"] += run
            in_burst, run, i = long, 0, j + 1
        elif symbol == KCode.SDP:  # a DLLP (or a SKP set below) may sit between burst TLPs
            census["dllp"] += 8
            i += 8
        elif symbol == KCode.COM:
            census["ordered_set"] += 4
            i += 4
        else:
            census["idle"] += 1
            run, i = run + 1, i + 1
    return census
