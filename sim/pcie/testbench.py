"""The PCIe simulation bench: Verilator model of the busprobe core + cocotbext-pcie root complex.

Building the model (outside the simulator, e.g. a session fixture or the sim backend)::

    from busprobe.sim.pcie.testbench import build_pcie_simulator, TOPLEVEL
    build_dir = build_pcie_simulator()          # once per design hash: <build root>/sim/pcie-<hash>
    # then cocotb_tools.runner.get_runner("verilator").test(build_dir=build_dir,
    #     hdl_toplevel=TOPLEVEL, test_module=..., timescale=TIMESCALE)

Inside a cocotb test (all methods are coroutines unless marked)::

    tb = PcieTestbench(dut, LinkConfig(gen=2, width=1, mps=256, mrrs=512,
                                       cap=None, latency_ns=0.0))
    await tb.start()                   # clock, reset, enumeration, BAR0, MPS/MRRS, bus master
    value = await tb.read32(offset)    # BAR0 access (offsets: busprobe.protocol.pcie.CSRS)
    await tb.write32(offset, value)
    buf = tb.alloc(nbytes)             # (sync) host memory; buf.address is the bus address
    buf.write(offset, data); buf.read(offset, n)   # (sync) host-side access, no bus traffic
    await tb.set_mps(512); await tb.set_mrrs(128)  # reprogram Device Control
    tb.now()                           # (sync) simulated seconds
    tb.upstream / tb.downstream        # LinkCounters: TLP/DLLP wire bytes per direction
    tb.tx_tlps / tb.rx_tlps            # lists, when tb.record_tlps is True: TLPs device->root
                                       # (tx) and root->device (rx) as cocotbext Tlp objects

Link timing, for the ceiling model (busprobe.model.pcie) -- measured with :class:`LinkCounters`:

* cocotbext-pcie serialises each packet for ``wire_bytes * 8 / rate`` seconds, one packet at a
  time per direction, ``rate`` = 4e9 bit/s for Gen2 x1 (5 GT/s after 8b/10b = 500 MB/s of
  bytes). TLP wire bytes = header (12, 3DW: the core uses 32-bit addresses) + payload + 8
  (STP 1 + sequence 2 + LCRC 4 + END 1, as on the wire); a DLLP is 8 bytes. Not modelled: SKP
  ordered sets (so ``skp=False`` for the model), replays, ECRC, power states; each end adds 5 ns
  of port delay.
* ACK: the receiver restarts an ACK latency timer per TLP and ACKs when it expires; at Gen2 x1
  with back-to-back TLPs that is one ACK per TLP for MPS >= 256 and one per ~2 TLPs at MPS 128.
  UpdateFC: one per TLP whose credits are released (posted for writes, non-posted for read
  requests), plus a few per 30 us from the idle timer. Both go the *opposite* way to the TLPs
  they answer.
* So for DMA writes the device-to-root lane carries only the MWr TLPs (+0.2 % timer DLLPs):
  throughput = 500 MB/s x MPS / (MPS + 20); measured 99.5-99.6 % of that at MPS 128/256/512.
* For DMA reads the root-to-device lane carries the completions *and* 2 DLLPs (ACK + UpdateFC-NP,
  16 bytes) per read request: use ``ack_every=1, updatefc_every=1`` in the model's assumptions;
  completions are as large as MPS allows unless ``split_on_all_rcb``. The root complex sends
  completions with zero memory latency unless ``latency_ns`` is set.

The core adds no link overhead of its own: its 64-bit x 125 MHz datapath (1 GB/s) is twice
Gen2 x1; telemetry ``tx_stall_cycles`` counts the cycles the link (transmit buffer of
``LinkConfig.tx_buffer`` TLPs, flow-control credits) held it back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import cocotb
from busprobe.protocol import pcie as proto
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.pcie.core import Device
from cocotbext.pcie.core.dllp import Dllp

from .chipset import ChipsetRootComplex
from .link_training import train
from .tlp_stream import TlpStreamEndpoint
from .uart import UartStream
from .upstream_speed import install as install_upstream_speed

__all__ = ["LinkConfig", "PcieTestbench", "HostBuffer", "LinkCounters", "build_pcie_simulator",
           "TOPLEVEL", "TIMESCALE", "silence_pcie_logging"]

TOPLEVEL = "busprobe_pcie_bench"  # bench_top.BENCH_TOPLEVEL: the core on its TLP bridge
TIMESCALE = ("1ns", "1ps")
_SIZES = (128, 256, 512, 1024, 2048, 4096)


def build_pcie_simulator_sources(folder: str = "pcie-verilog", **options) -> list[Path]:
    """Generate the core's Verilog (and LiteX's ``csr.csv``/``csr.json``) into
    ``<build root>/<folder>/`` and return the Verilog files, the top first; ``options`` go to
    :func:`~busprobe.gateware.pcie.sim_top.generate_verilog` (another PHY, its top's name).

    They are generated in a private folder and moved there atomically, so parallel test workers
    never read a half-written file (the generator is deterministic: every worker writes the same).
    """
    import os
    import tempfile

    from busprobe.build_cache import build_root
    from busprobe.gateware.pcie.sim_top import generate_verilog

    out = build_root() / folder
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        names = [path.name for path in generate_verilog(tmp, **options)]
        for name in (*names, "csr.csv", "csr.json"):
            os.replace(Path(tmp) / name, out / name)
    return [out / name for name in names]


def build_pcie_simulator() -> Path:
    """Generate the Verilog (:func:`build_pcie_simulator_sources`) and build (or reuse) its
    Verilator model, the core on its TLP bridge (:mod:`.bench_top`); return the build dir."""
    from busprobe.build_cache import build_root
    from busprobe.sim.verilator_build import build_verilator_model

    from .bench_top import BRIDGE_SOURCE, write_bench_top

    sources = build_pcie_simulator_sources()  # the core's top first, then the CPU's
    top = write_bench_top(sources[0], 1, build_root() / "sim" / "tops", TOPLEVEL, [""])
    # The bench drives and reads top-level ports only: the model need not keep every signal
    # visible (sim/verilator_build.py), which makes it several times faster with the CPU in it.
    return build_verilator_model("pcie", [*sources, BRIDGE_SOURCE, top], TOPLEVEL,
                                 timescale=TIMESCALE, public_ports_only=True)


def silence_pcie_logging(level: int = logging.WARNING) -> None:
    """cocotbext-pcie logs every memory read/write at INFO; that alone slows long runs."""
    logging.getLogger("cocotb.pcie").setLevel(level)
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("cocotb.pcie"):
            logging.getLogger(name).setLevel(level)


def _encode_size(nbytes: int, what: str) -> int:
    if nbytes not in _SIZES:
        raise ValueError(f"{what} {nbytes} is not one of {', '.join(map(str, _SIZES))}")
    return _SIZES.index(nbytes)


@dataclass(frozen=True)
class LinkConfig:
    """The simulated link and root complex.

    Attributes
    ----------
    gen, width : int
        Link speed generation (1..3) and lane count, set on the device port before connecting.
    mps, mrrs : int
        Max Payload Size / Max Read Request Size programmed in the device's Device Control.
    rcb : int
        Read Completion Boundary of the root (64 or 128).
    split_on_all_rcb : bool
        Root splits read completions at every RCB (otherwise at MPS, RCB-aligned).
    cap : float or None
        Root memory throughput in bytes/s (both directions), None for unlimited.
    latency_ns : float
        Root read latency.
    tx_buffer : int
        TLPs the endpoint's transmit buffer holds before ``tx_ready`` drops.
    """

    gen: int = 2
    width: int = 1
    mps: int = 256
    mrrs: int = 512
    rcb: int = 64
    split_on_all_rcb: bool = False
    cap: float | None = None
    latency_ns: float = 0.0
    tx_buffer: int = 4

    def __post_init__(self) -> None:
        if self.gen not in (1, 2, 3):
            raise ValueError(f"PCIe gen {self.gen} not simulated (1, 2 or 3)")
        if self.width not in (1, 2, 4, 8, 16):
            raise ValueError(f"bad link width x{self.width}")
        _encode_size(self.mps, "MPS")
        _encode_size(self.mrrs, "MRRS")
        if self.rcb not in (64, 128):
            raise ValueError(f"RCB {self.rcb} is not 64 or 128")


@dataclass
class LinkCounters:
    """What one direction of the simulated link carried (bytes as serialised on the wire)."""

    tlps: int = 0
    tlp_bytes: int = 0
    dllps: dict[str, int] = field(default_factory=dict)
    dllp_bytes: int = 0

    def count(self, pkt) -> None:
        size = pkt.get_wire_size()
        if isinstance(pkt, Dllp):
            name = pkt.type.name
            self.dllps[name] = self.dllps.get(name, 0) + 1
            self.dllp_bytes += size
        else:
            self.tlps += 1
            self.tlp_bytes += size

    def to_json(self) -> dict:
        return {"tlps": self.tlps, "tlp_bytes": self.tlp_bytes, "dllps": dict(self.dllps),
                "dllp_bytes": self.dllp_bytes}


def _count_transmissions(port, counters: LinkCounters) -> None:
    """Count every packet ``port`` serialises (wraps its ``handle_tx``)."""
    transmit = port.handle_tx

    async def handle_tx(pkt) -> None:
        counters.count(pkt)
        await transmit(pkt)

    port.handle_tx = handle_tx


@dataclass
class HostBuffer:
    """A block of root-complex memory the device can DMA to/from.

    ``address`` is the bus address; :meth:`read`/:meth:`write` access it directly (no TLPs).
    """

    address: int
    size: int
    _region: object = field(repr=False)
    _offset: int = field(default=0, repr=False)

    def read(self, offset: int = 0, length: int | None = None) -> bytes:
        length = self.size - offset if length is None else length
        self._check(offset, length)
        start = self._offset + offset
        return bytes(self._region.mem[start:start + length])

    def write(self, offset: int, data: bytes) -> None:
        self._check(offset, len(data))
        start = self._offset + offset
        self._region.mem[start:start + len(data)] = data

    def _check(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise ValueError(f"access {offset}+{length} outside a {self.size}-byte buffer")

    @classmethod
    def alloc(cls, rc, size: int) -> HostBuffer:
        """``size`` bytes of root complex ``rc``'s memory for DMA,
        :data:`~busprobe.protocol.pcie.DMA_ADDRESS_ALIGN`-aligned (and page-aligned)."""
        if size <= 0:
            raise ValueError(f"buffer size must be positive, not {size}")
        align = max(proto.DMA_ADDRESS_ALIGN, 4096)
        region = rc.mem_pool.alloc_region(size + align)
        base = region.get_absolute_address(0)
        offset = (-base) % align
        return cls(base + offset, size, region, offset)


def _root_complex(config: LinkConfig) -> ChipsetRootComplex:
    rc = ChipsetRootComplex(latency_ns=config.latency_ns, cap=config.cap)
    # The root supports 4096-byte payloads; start() programs the link's MPS in both ends.
    rc.max_payload_size = 0x5
    rc.max_read_request_size = 0x5
    rc.read_completion_boundary = config.rcb == 128
    rc.split_on_all_rcb = config.split_on_all_rcb
    return rc


async def _reset(dut) -> None:
    cocotb.start_soon(Clock(dut.sys_clk, 1e9 / proto.CLOCK_HZ, unit="ns").start())
    dut.sys_rst.value = 1
    await ClockCycles(dut.sys_clk, 8)
    dut.sys_rst.value = 0
    await RisingEdge(dut.sys_clk)


class PcieTestbench:
    """Root complex + link + :class:`TlpStreamEndpoint` around the busprobe core's top.

    Parameters
    ----------
    dut
        The cocotb handle of :data:`TOPLEVEL`.
    config : LinkConfig
    """

    def __init__(self, dut, config: LinkConfig | None = None, *, prefix: str = "",
                 rc: ChipsetRootComplex | None = None, port=None):
        # Before anything of cocotbext-pcie's is built: the ports, host bridge and TLPs it builds
        # itself are then the quicker subclasses (DESIGN §5.3 "Simulation speed").
        install_upstream_speed()
        self.dut = dut
        self.config = config = config or LinkConfig()
        silence_pcie_logging()
        self.log = logging.getLogger("cocotb.busprobe.pcie")
        self.rc = rc if rc is not None else _root_complex(config)
        self.ep = TlpStreamEndpoint(dut, dut.sys_clk, prefix=f"{prefix}pcie_sim_",
                                    data_width=proto.DATA_WIDTH, bar0_size=proto.BAR0_SIZE,
                                    msi_vectors=32, tx_buffer=config.tx_buffer)
        self.ep.vendor_id = proto.VENDOR_ID
        self.ep.device_id = proto.DEVICE_ID
        self.ep.pcie_cap.max_payload_size_supported = _encode_size(proto.MAX_PAYLOAD_SIZE, "MPS")
        self.dev = Device(self.ep)
        # cocotbext-pcie times the link only if the speed/width are set before connecting.
        self.dev.upstream_port.max_link_speed = config.gen
        self.dev.upstream_port.max_link_width = config.width
        (port if port is not None else self.rc.make_port()).connect(self.dev)
        #: Wire traffic device -> root ("upstream") and root -> device ("downstream").
        self.upstream = LinkCounters()
        self.downstream = LinkCounters()
        _count_transmissions(self.dev.upstream_port, self.upstream)
        _count_transmissions(self.dev.upstream_port.other, self.downstream)
        self.function = None  # the RC's view of the device, after start()
        self.bar0 = None
        self.record_tlps = False
        self.tx_tlps: list = []
        self.rx_tlps: list = []
        self.ep.on_tx_tlp = self._record_tx
        self.ep.on_rx_tlp = self._record_rx
        self.msi_count = [0] * 32
        #: The SoC's console (the firmware's UART).
        self.uart = UartStream(dut, dut.sys_clk, prefix=f"{prefix}serial_")

    def _record_tx(self, tlp) -> None:
        if self.record_tlps:
            self.tx_tlps.append(tlp)

    def _record_rx(self, tlp) -> None:
        if self.record_tlps:
            self.rx_tlps.append(tlp)

    async def start(self) -> None:
        """Clock and reset the DUT, train the link, enumerate, assign BAR0, program MPS/MRRS,
        enable mastering."""
        await _reset(self.dut)
        await self.train_link()
        await self.rc.enumerate()
        await self.bring_up()

    async def train_link(self) -> None:
        """The host finds the device once the link is up, as on a board."""
        await train(self.ep.link_signals, gen=self.config.gen, width=self.config.width)

    async def bring_up(self) -> None:
        """After enumeration: find the endpoint, assign BAR0, program MPS/MRRS, mastering, MSI."""
        self.function = self.rc.find_device(self.ep.pcie_id)
        if self.function is None:
            raise RuntimeError("enumeration did not find the busprobe endpoint")
        await self.function.enable_device()
        await self.function.set_master()
        await self.set_mps(self.config.mps)
        await self.set_mrrs(self.config.mrrs)
        self.bar0 = self.function.bar_window[0]
        try:
            await self.function.alloc_irq_vectors(1, 32)
            for vector in range(32):
                self.function.request_irq(vector, self._count_msi(vector))
        except Exception as exc:  # MSI is optional for the bench
            self.log.warning("MSI not enabled: %s", exc)

    def _count_msi(self, vector: int):
        async def handler() -> None:
            self.msi_count[vector] += 1
        return handler

    async def set_mps(self, mps: int) -> None:
        """Program MPS in the device's Device Control; the root sends completions no larger."""
        await self.function.set_mps(_encode_size(mps, "MPS"))
        self.rc.max_payload_size = _encode_size(mps, "MPS")

    async def set_mrrs(self, mrrs: int) -> None:
        await self.function.set_readrq(_encode_size(mrrs, "MRRS"))

    async def read32(self, offset: int) -> int:
        return await self.bar0.read_dword(offset)

    async def write32(self, offset: int, value: int) -> None:
        await self.bar0.write_dword(offset, value & 0xFFFF_FFFF)

    def alloc(self, size: int) -> HostBuffer:
        """Host memory for DMA (:meth:`HostBuffer.alloc`)."""
        return HostBuffer.alloc(self.rc, size)

    async def wait_cycles(self, cycles: int) -> None:
        await ClockCycles(self.dut.sys_clk, cycles)

    @staticmethod
    def now() -> float:
        """Simulated time in seconds."""
        return get_sim_time("ps") * 1e-12

    async def config_read32(self, offset: int) -> int:
        return await self.function.config_read_dword(offset)
