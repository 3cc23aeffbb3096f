"""cocotb test module: the PCIe bench as an RPC server for :mod:`busprobe.sim.pcie.backend`.

The host process runs the real driver (:mod:`busprobe.backends.pcie.driver`); every BAR0 access,
host-memory access and wait it makes arrives here and is carried out on
:class:`~busprobe.sim.pcie.testbench.PcieTestbench` in simulated time. The link configuration
comes as JSON in ``BUSPROBE_PCIE_LINK`` (fields of :class:`LinkConfig`).
"""

from __future__ import annotations

import json
import os

import cocotb
from busprobe.sim.rpc import serve
from cocotb.simtime import get_sim_time
from cocotb.triggers import Event, First, Timer

from .faults import FATAL, STRAY, FaultInjector
from .guard_model import GuardModel
from .multi_top import SwitchedBench
from .testbench import HostBuffer, LinkConfig, PcieTestbench

__all__ = ["ENV_LINK", "ENV_ENDPOINTS", "ENV_PHY", "ENV_PARTNER", "PcieRpcHandler"]

ENV_LINK = "BUSPROBE_PCIE_LINK"
#: How many cores the model has (``sim:pcie?endpoints=N``; the multi top, :mod:`.multi_top`):
#: then each is served on its own RPC channel (:mod:`busprobe.sim.shared_clock`).
ENV_ENDPOINTS = "BUSPROBE_PCIE_ENDPOINTS"
#: ``sim:pcie?phy=ecp5``: the model is the core on the soft endpoint
#: (:mod:`.symbol.soc_model`), served through :class:`~.symbol.soc_bench.SoftSocHost`.
ENV_PHY = "BUSPROBE_PCIE_PHY"
#: ``sim:pcie?partner=silent`` (``phy=ecp5`` only): the root port is not on the lane.
ENV_PARTNER = "BUSPROBE_PCIE_PARTNER"


class PcieRpcHandler:
    """The requests the sim backend may make (``rpc_<name>``), each a coroutine.

    Parameters
    ----------
    tb : PcieTestbench or SoftSocHost
        Started bench (the soft endpoint's offers no console and no fault injection).
    """

    def __init__(self, tb: PcieTestbench) -> None:
        self.tb = tb
        self.buffers: dict[int, HostBuffer] = {}
        self._next_id = 1
        self.msi_pending = 0
        self.injector: FaultInjector | None = None
        self._msi = Event()
        for vector in range(len(tb.function.msi_vectors)):
            tb.function.request_irq(vector, self._on_msi)

    async def _on_msi(self) -> None:
        self.msi_pending += 1
        self._msi.set()

    async def rpc_now(self) -> float:
        return self.tb.now()

    async def rpc_read32(self, offset: int) -> int:
        value = await self.tb.read32(offset)
        await self._completion_ordered_after_writes()
        return value

    async def _completion_ordered_after_writes(self) -> None:
        """Workaround for the capped chipset model (sim/pcie/chipset.py, ``cap``): it holds
        memory writes until its bucket has absorbed them but hands read completions over at
        once, so a completion overtakes earlier posted writes, which PCIe ordering forbids (a
        completion may not pass a posted request) and no root complex does. The host would then
        see a descriptor done and read its buffer before the data landed. Here the host gets the
        register value only once every write booked before the completion is in memory.
        """
        busy_until = getattr(self.tb.rc, "_busy_until_ps", 0)
        delay = busy_until - round(get_sim_time("ps"))
        if getattr(self.tb.rc, "cap", None) and delay > 0:
            await Timer(delay, unit="ps")

    async def rpc_write32(self, offset: int, value: int) -> None:
        await self.tb.write32(offset, value)

    async def rpc_soft_link_outputs(self) -> dict[str, int]:
        """``phy=ecp5``: the soft endpoint's status word and counters as its ports have them
        now (what the PHY's link registers should read)."""
        from busprobe.protocol.pcie import SOFT_LINK_CSRS

        return {name: self.tb.bench.output(name) for name, _ in SOFT_LINK_CSRS
                if name != "soft_link"}

    async def rpc_corrupt_tlps(self, count: int) -> None:
        """``phy=ecp5``: flip a header bit of the endpoint's next ``count`` TLPs on the wire
        (a bad LCRC: the root port NAKs, the endpoint replays)."""
        self.tb.bench.corrupt_tlps += count

    async def rpc_write32_many(self, writes: list[tuple[int, int]]) -> None:
        for offset, value in writes:
            await self.tb.write32(offset, value)

    async def rpc_alloc(self, size: int) -> tuple[int, int]:
        buf = self.tb.alloc(size)
        handle, self._next_id = self._next_id, self._next_id + 1
        self.buffers[handle] = buf
        return handle, buf.address

    async def rpc_free(self, handle: int) -> None:
        # cocotbext-pcie's memory pool has no free; the region just stops being used.
        self.buffers.pop(handle, None)

    async def rpc_buf_read(self, handle: int, offset: int, length: int) -> bytes:
        return self.buffers[handle].read(offset, length)

    async def rpc_buf_write(self, handle: int, offset: int, data: bytes) -> None:
        self.buffers[handle].write(offset, data)

    async def rpc_wait_msi(self, timeout: float, latency: float = 0.0) -> bool:
        """Let simulated time run until an MSI arrives or ``timeout`` seconds pass; an MSI is
        answered ``latency`` seconds after it came (a slow host's interrupt and driver path)."""
        if not self.msi_pending:
            self._msi.clear()
            await First(self._msi.wait(), Timer(max(1, round(timeout * 1e12)), unit="ps"))
        got, self.msi_pending = self.msi_pending > 0, 0
        if got and latency > 0:
            await Timer(max(1, round(latency * 1e12)), unit="ps")
        return got

    async def rpc_console_write(self, data: bytes) -> None:
        """Type ``data`` on the SoC's console (its UART)."""
        await self.tb.uart.send(data)

    async def rpc_console_read(self, until: bytes, timeout: float) -> tuple[bytes, bool]:
        """What the console printed up to and including ``until`` and True, or after
        ``timeout`` simulated seconds without it what it printed and False."""
        return await self.tb.uart.read_until(until, timeout)

    async def rpc_configure(self, mps: int | None, mrrs: int | None) -> None:
        """Reprogram Device Control through the root complex; the core reads it live."""
        if mps is not None:
            await self.tb.set_mps(mps)
        if mrrs is not None:
            await self.tb.set_mrrs(mrrs)
        if self.injector is not None:
            self.injector.model.max_payload_size = 128 << self.tb.ep.pcie_cap.max_payload_size
        await self.tb.wait_cycles(16)

    async def rpc_faults(self, seed: int, fault_rate: float, stray_rate: float,
                         fatal: list[str] | None = None, stray: list[str] | None = None) -> None:
        """Make the root complex hostile from now on (:mod:`busprobe.sim.pcie.faults`): each
        real completion becomes a fault of ``fatal`` with ``fault_rate``, and a stray of
        ``stray`` goes next to it with ``stray_rate`` (rates 0: a well-behaved root again)."""
        if self.injector is None:
            model = GuardModel(int(self.tb.ep.pcie_id), self.tb.config.mps)
            self.injector = FaultInjector(model, seed)
            self.injector.attach(self.tb.ep)
        self.injector.rng.seed(seed)
        self.injector.fault_rate, self.injector.stray_rate = fault_rate, stray_rate
        self.injector.fatal = tuple(fatal or FATAL)
        self.injector.stray = tuple(stray or STRAY)

    async def rpc_faults_injected(self) -> dict[str, int]:
        """Faults and strays made so far, by kind."""
        return dict(self.injector.injected) if self.injector else {}


@cocotb.test()
async def pcie_rpc_server(dut) -> None:
    """Bring the bench up, then serve the host until it says shutdown."""
    config = LinkConfig(**json.loads(os.environ.get(ENV_LINK, "{}")))

    endpoints = int(os.environ.get(ENV_ENDPOINTS, "1"))

    async def setup() -> tuple[PcieRpcHandler | list[PcieRpcHandler], dict]:
        if os.environ.get(ENV_PHY) == "ecp5":
            from .symbol.soc_bench import SoftSocHost

            host = await SoftSocHost.start(dut, mps=config.mps, mrrs=config.mrrs,
                                           silent=os.environ.get(ENV_PARTNER) == "silent")
            return PcieRpcHandler(host), {}
        if endpoints > 1:
            bench = SwitchedBench(dut, config, endpoints)
            await bench.start()
            return [PcieRpcHandler(tb) for tb in bench.benches], {}
        tb = PcieTestbench(dut, config)
        await tb.start()
        return PcieRpcHandler(tb), {}

    profile = os.environ.get("BUSPROBE_SIM_PROFILE")  # a file name: cProfile the simulator side
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    try:
        await serve(setup)
    finally:
        if profile:
            profiler.disable()
            profiler.dump_stats(profile)
