"""``sim:pcie`` — the busprobe PCIe device in simulation, driven by the real host driver.

``sim:pcie?gen=1|2|3&width=1&mps=..&mrrs=..&cap=BYTES_PER_S&latency_ns=..&rcb=64|128&driver_latency_ns=..&phy=sim|ecp5&partner=present|silent``

The selector is described (options checked, bus and hops) by :mod:`busprobe.targets.sim_pcie`;
:func:`open_sim_pcie` builds the device from that description. The Verilator model of the
gateware runs in a cocotb process (:mod:`busprobe.sim.pcie.server`) behind a cocotbext-pcie root
complex; this process runs :class:`~busprobe.backends.pcie.dma_transport.PcieDmaTransport`, the
same transport and driver the VFIO backend uses, over a :class:`SimDmaPlatform` whose BAR,
buffers and MSI calls cross to the simulator over :mod:`busprobe.sim.rpc`; its clock is
simulated time. The simulated SoC runs the firmware the board's ROM holds
(:func:`busprobe.bitstream.firmware.build_firmware`, loaded when the simulator starts); its
console is the simulator's UART stream (:meth:`SimDmaPlatform.console`).

``phy=ecp5`` runs the same core on the soft Gen1 x1 endpoint instead
(:mod:`busprobe.sim.pcie.symbol.soc_model`: ``SoftPCIEPHY``, the root complex's packets
framed and trained symbol by symbol, four symbols a clock,
:class:`~busprobe.sim.pcie.symbol.soc_bench.SoftSocHost` behind the same RPC handler); its
SoC runs no firmware (its core clock is the link's word clock, 62.5 MHz, where the firmware
is built for the board's 125 MHz).

``driver_latency_ns`` is the host's, not the link's: every MSI is answered that long after it
came, as by a slow interrupt and driver path (the sweep's host-run figure drops, the
firmware's device-run one does not).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from busprobe.backends.pcie.dma_transport import PcieDmaTransport
from busprobe.backends.pcie.platform import DmaPlatform
from busprobe.protocol import pcie as proto
from busprobe.stdout_guard import stdout_to_stderr
from busprobe.targets import TargetDescription
from busprobe.targets.sim_pcie import check_setting, sim_pcie_hops
from busprobe.transport import BusDescription, InvalidRequest, TransportError

from ..channels import SimClock
from ..simulator import SimServer, SimulatorClient
from ..target_group import SimTargetGroup

__all__ = ["open_sim_pcie", "open_sim_pcie_group", "SimPcieTransport", "SimDmaPlatform",
           "SimPcieGroup", "SimClock", "SimConsole", "completion_timeout", "HOST_OPTIONS"]

#: Selector options of the simulated host, not of the link (the rest are LinkConfig's);
#: ``endpoints`` is the model's shape (:class:`SimPcieGroup`).
HOST_OPTIONS = ("driver_latency_ns", "endpoints", "phy", "partner")

#: The driver's MSI wait on the soft endpoint, in slices this long (simulated seconds): after
#: each it polls the engine through BAR0, and on the symbol-level link every poll is a
#: completion, an ACK and an UpdateFC-NP on the lane a write's TLPs take (40 symbol times; at
#: 20 µs slices 0.8 % of a Gen1 write). A 64 KiB transfer takes some 300 µs: it ends with its
#: MSI, never a slice (the VFIO driver's slice is 10 ms).
SOFT_PHY_IRQ_SLICE = 1e-3

_LANE_BYTES_PER_S = {1: 250e6, 2: 500e6, 3: 984.6e6}


def completion_timeout(link: dict[str, Any]) -> float:
    """Seconds a DMA read may wait for its completions on the simulated ``link`` before the
    core fails it: 4x the longest normal wait (the root's latency, then twice the reads the core
    keeps in flight at the root's rate), and at least PCIe's 50 us (Base Spec 3.0 §2.8), which
    the simulated core starts with. A slow root (``cap``, ``latency_ns``) gets more, as a real
    chipset's would be given a longer Completion Timeout range."""
    rate = _LANE_BYTES_PER_S[link["gen"]] * link["width"]
    if link.get("cap"):
        rate = min(rate, link["cap"])
    wait = link["latency_ns"] * 1e-9 + 2 * proto.READ_TAGS * proto.MAX_READ_REQUEST_SIZE / rate
    return max(50e-6, 4 * wait)


Call = Callable[..., Any]


def _caller(server: SimServer, channel: int | None) -> Call:
    """``server.call`` for one endpoint's channel (None: the only endpoint)."""
    if channel is None:
        return server.call
    return lambda method, *args: server.call(method, *args, channel=channel)


def link_json(link: Mapping[str, Any]) -> str:
    """The simulated link as the bench's ``LinkConfig`` takes it: the selector's options but
    the host's and the model's shape (:data:`HOST_OPTIONS`)."""
    return json.dumps({k: v for k, v in link.items() if k not in HOST_OPTIONS})


class _SimBar:
    def __init__(self, call: Call) -> None:
        self._call = call

    def read32(self, offset: int) -> int:
        return self._call("read32", offset)

    def write32(self, offset: int, value: int) -> None:
        self._call("write32", offset, value)

    def write32_many(self, writes: list[tuple[int, int]]) -> None:
        self._call("write32_many", writes)


class _SimBuffer:
    """Root-complex memory in the simulator (no bus traffic to read or write it)."""

    def __init__(self, call: Call, size: int) -> None:
        self._call = call
        self.size = size
        self.handle, self.bus_address = self._call("alloc", size)

    def read(self, offset: int, length: int) -> bytes:
        return self._call("buf_read", self.handle, offset, length)

    def write(self, offset: int, data: bytes) -> None:
        self._call("buf_write", self.handle, offset, bytes(data))


class _SimMsi:
    def __init__(self, call: Call, latency: float) -> None:
        self._call = call
        self.latency = latency

    def wait(self, timeout: float) -> bool:
        return self._call("wait_msi", timeout, self.latency)


class SimConsole:
    """The simulated SoC's console (its UART), for :mod:`busprobe.backends.pcie.console`;
    timeouts are simulated seconds."""

    #: 20 ms: a `dma` through 1 MiB takes about 5 (a minute of wall time).
    command_timeout = 0.02

    def __init__(self, call: Call) -> None:
        self._call = call

    def write(self, data: bytes) -> None:
        self._call("console_write", bytes(data))

    def read_until(self, marker: bytes, timeout: float) -> tuple[bytes, bool]:
        return self._call("console_read", bytes(marker), timeout)


class SimDmaPlatform(SimulatorClient, DmaPlatform):
    """:class:`~busprobe.backends.pcie.platform.DmaPlatform` executed in the simulator.

    Parameters
    ----------
    target : TargetDescription
        A ``sim:pcie`` description (:func:`busprobe.targets.describe`): its options are the
        simulated link (:class:`~busprobe.sim.pcie.testbench.LinkConfig` fields), its bus and
        hops are this platform's, with MPS/MRRS as the device reports them once open.

    Attributes
    ----------
    link : dict
        The selector's options: the link the simulator is started with (all but
        :data:`HOST_OPTIONS`); :meth:`configure` updates MPS/MRRS.
    server : SimServer or None
        The simulator, while open.
    """

    def __init__(self, target: TargetDescription, *, group: SimPcieGroup | None = None,
                 channel: int | None = None) -> None:
        if target.bus is None:
            raise InvalidRequest(f"{target.text}: not a simulated PCIe description")
        self.name = target.text if channel is None else f"{target.text}#{channel}"
        self.target = target
        self._bus: BusDescription = target.bus
        self.link: dict[str, Any] = dict(target.options)
        self.group, self.channel = group, channel
        self.driver_latency = (self.link.get("driver_latency_ns") or 0.0) * 1e-9
        self.server: SimServer | None = None
        #: Why the SoC runs no firmware (None: it runs it); the DMA core works either way.
        self.firmware_problem: str | None = None
        self.bar: _SimBar
        self.msi: _SimMsi | None = None
        # Timeouts are on the simulated clock: 20 us plus 10 MB/s is 40x slower than the link,
        # so only a stuck DMA meets them, and it is found in seconds of wall time.
        self.driver_options: dict[str, Any] = {
            "timeout": lambda nbytes: 20e-6 + nbytes / 10e6, "irq_slice": 20e-6,
            "completion_timeout": completion_timeout(self.link)}
        if self.link.get("phy") == "ecp5":
            self.driver_options["irq_slice"] = SOFT_PHY_IRQ_SLICE

    def open(self) -> None:
        from .server import ENV_LINK, ENV_PARTNER, ENV_PHY
        from .testbench import TIMESCALE, TOPLEVEL, build_pcie_simulator

        if self.group is not None:  # the group started the simulator; this is one channel
            self.server = self.group.server
            call = _caller(self._server(), self.channel)
            self.bar, self.msi = _SimBar(call), _SimMsi(call, self.driver_latency)
            self.firmware_problem = "the endpoints of one simulation run no firmware"
            return
        phy = self.link.get("phy", "sim")
        with stdout_to_stderr():  # the build's make/verilator chatter must not reach --json -
            if phy == "ecp5":
                from .symbol.soc_model import TOPLEVEL as toplevel
                from .symbol.soc_model import build_soft_soc_simulator

                build_dir, plusargs = build_soft_soc_simulator(), []
                self.firmware_problem = ("the soft endpoint's model runs no firmware (its core "
                                         "clock is the link's word clock)")
            else:
                toplevel = TOPLEVEL
                build_dir = build_pcie_simulator()
                plusargs = self._firmware_plusargs()
        self.server = SimServer(build_dir, toplevel, "busprobe.sim.pcie.server", name=self.name,
                                env={ENV_LINK: link_json(self.link), ENV_PHY: phy,
                                     ENV_PARTNER: self.link.get("partner", "present")},
                                timescale=TIMESCALE,
                                plusargs=plusargs)
        self.bar = _SimBar(self.server.call)
        self.msi = _SimMsi(self.server.call, self.driver_latency)

    def close(self) -> None:
        if self.group is not None:  # the group stops the simulator
            self.server = None
            return
        super().close()

    def _call(self, method: str, *args: Any) -> Any:
        return _caller(self._server(), self.channel)(method, *args)

    def _firmware_plusargs(self) -> list[str]:
        """The SoC's firmware image for the simulator; without a cross compiler the core still
        works, and the console and the device-run say why they are missing."""
        from busprobe.bitstream.firmware import build_firmware
        from busprobe.bitstream.result import BuildError
        from busprobe.gateware.pcie.sim_top import FIRMWARE_PLUSARG

        try:
            return [f"+{FIRMWARE_PLUSARG}={build_firmware().memh}"]
        except BuildError as exc:
            self.firmware_problem = str(exc)
            return []

    def console(self) -> SimConsole:
        """The SoC's console; :class:`TransportError` when the SoC runs no firmware."""
        if self.firmware_problem:
            raise TransportError(f"{self.name}: no firmware: {self.firmware_problem}")
        if self.group is not None:
            raise TransportError(f"{self.name}: the console of one of several endpoints is "
                                 "not offered")
        return SimConsole(self._server().call)

    def alloc(self, size: int) -> _SimBuffer:
        return _SimBuffer(_caller(self._server(), self.channel), size)

    def free(self, buf: _SimBuffer) -> None:
        self._call("free", buf.handle)

    def now(self) -> float:
        return self._call("now")

    def bus(self, identity: Mapping[str, int]) -> BusDescription:
        """The description's bus, with MPS/MRRS as the device reports them (as configured
        before it is opened)."""
        return replace(self._bus, mps=identity.get("mps", self.link["mps"]),
                       mrrs=identity.get("mrrs", self.link["mrrs"]))

    def configure(self, **settings: Any) -> None:
        for key, value in settings.items():
            check_setting(key, value)  # the selector's rules
        self.link.update(settings)
        if self.server is not None:
            self._call("configure", settings.get("mps"), settings.get("mrrs"))

    def topology(self, bus: BusDescription) -> list[dict[str, Any]]:
        """The description's hops (root complex, [switch,] gateware), with ``bus``'s MPS/MRRS."""
        return [hop.to_json() for hop in sim_pcie_hops({**self.link, "mps": bus.mps,
                                                        "mrrs": bus.mrrs}, self.channel)]


class SimPcieTransport(PcieDmaTransport):
    """The simulated device: the PCIe transport over :class:`SimDmaPlatform`, with the
    simulation's amortisation.

    A simulated link is deterministic (no jitter to average out) and slow to run: the bench
    simulates ~35 us of link time per wall second (~30 s per MiB at Gen2 x1). Two transfers and
    64 KiB per point amortise start-up (the first descriptors' MMIO writes, ~0.2 us) to under
    0.2 %, and the default ladder stops at 256 KiB so a default sweep takes minutes.
    """

    min_transfers = 2
    min_bytes = 64 << 10
    default_max_length = 256 << 10
    # 200 us of link time (~6 s of wall time per repeat) settles any point's figure; short
    # transfers would otherwise need thousands of descriptors for 64 KiB.
    max_transfers = 512
    max_bus_seconds = 200e-6
    # The device-run is deterministic too: one run per point, of at most 256 KiB.
    device_run_repeats = 1
    device_run_bytes = 256 << 10


def open_sim_pcie(target: TargetDescription) -> SimPcieTransport:
    """Factory of the ``sim:pcie`` target (:attr:`busprobe.buses.PCIE`)."""
    if target.options.get("endpoints", 1) > 1:
        raise InvalidRequest(f"{target.text}: several endpoints are several targets; "
                             "busprobe sweep runs them (alone, then together)")
    return SimPcieTransport(SimDmaPlatform(target))


class SimPcieGroup(SimTargetGroup):
    """``sim:pcie?endpoints=N``: N endpoints behind one switch in one simulation, each a
    target of its own (:class:`SimPcieTransport` on its own RPC channel).

    Its attributes are :class:`~busprobe.sim.target_group.SimTargetGroup`'s, target i being
    endpoint i.
    """

    def __init__(self, target: TargetDescription) -> None:
        self.endpoints = int(target.options["endpoints"])
        super().__init__(target.text, [
            SimPcieTransport(SimDmaPlatform(target, group=self, channel=i))
            for i in range(self.endpoints)])
        self._link = self.transports[0].platform.link  # type: ignore[attr-defined]

    def open(self) -> None:
        from .multi_top import MULTI_TOPLEVEL, build_multi_simulator
        from .server import ENV_ENDPOINTS, ENV_LINK
        from .testbench import TIMESCALE

        with stdout_to_stderr():
            build_dir = build_multi_simulator(self.endpoints)
        self.serve(SimServer(build_dir, MULTI_TOPLEVEL, "busprobe.sim.pcie.server",
                             name=self.name, timescale=TIMESCALE,
                             env={ENV_LINK: link_json(self._link),
                                  ENV_ENDPOINTS: str(self.endpoints)}))


def open_sim_pcie_group(target: TargetDescription) -> SimPcieGroup:
    """The endpoints of ``sim:pcie?endpoints=N`` (not yet open)."""
    return SimPcieGroup(target)
