"""busprobe PCIe DMA core: LitePCIe endpoint + DMA + MSI + pattern source/checker + telemetry.

One design for the board and the simulation: :class:`BusprobePCIeSoC` takes a PHY object
(:class:`litepcie.phy.s7pciephy.S7PCIEPHY` x1 Gen2 on the board,
:class:`busprobe.gateware.pcie.sim_phy.SimPCIEPHY` in simulation) and places its CSR regions
where :mod:`busprobe.protocol.pcie` says. Around the DMA core sits a small SoC
(:mod:`busprobe.protocol.pcie_soc`): a VexRiscv CPU running the firmware (``firmware/``) from
ROM, SRAM, a UART (its console), a timer, the link history (:mod:`.link_history`) and the
firmware mailbox (:mod:`.firmware_mailbox`). The host reaches the CSRs through BAR0 (LitePCIe's
Wishbone master, a second bus master beside the CPU): BAR0 offset ``x`` is the CPU's address
``CSR_BASE + x``, so the BAR0 map is the CSR map either way.

Data path::

    pattern generator ──> DMA writer ──> MWr TLPs ──> host memory        ("write")
    host memory ──> MRd/CplD ──> receive guard ──> DMA reader ──> pattern checker   ("read")
    DMA reader ──> DMA writer when ``pcie_dma0_loopback_enable`` = 1      ("loopback")

Every TLP from the link passes the receive guard (:mod:`.rx_guard`) before LitePCIe's
depacketizer: malformed, poisoned, unexpected, failed (UR/CA) and inconsistent completions are
dropped and counted, reads that lose data or time out fail, and the checker takes no data after
a failure until the read path is reset (:mod:`.read_reset`).
"""

from __future__ import annotations

from busprobe.protocol import pcie as proto
from busprobe.protocol import pcie_soc as soc
from litepcie.core import LitePCIeEndpoint, LitePCIeMSI
from litepcie.frontend.dma import LitePCIeDMA
from litepcie.frontend.wishbone import LitePCIeWishboneMaster
from litex.gen import LiteXModule
from litex.soc.integration.soc_core import SoCCore
from litex.soc.interconnect.csr import CSRStatus, CSRStorage
from migen import Signal

from .firmware_mailbox import FirmwareMailbox
from .link_history import LinkHistory
from .pattern import PatternChecker, PatternGenerator
from .read_reset import ReadPathReset, reset_with
from .rx_guard import RxTlpGuard
from .telemetry import GuardCounters, TLPTelemetry

__all__ = ["BusprobePCIeSoC", "BusprobeCSRs"]


class BusprobeCSRs(LiteXModule):
    """busprobe's own CSR block (region ``busprobe``): identity, pattern control, telemetry.

    Registers are created in the order of :data:`busprobe.protocol.pcie.BUSPROBE_CSRS`, so their
    offsets are that module's; see there for what each means.

    Parameters
    ----------
    telemetry : TLPTelemetry
    generator : PatternGenerator
    checker : PatternChecker
    guard : RxTlpGuard
    guard_counters : GuardCounters
    read_path : ReadPathReset
    clk_freq : int
        Core clock in Hz (reported in ``clock_hz``).
    completion_timeout : int
        Reset value of ``completion_timeout``, core cycles.
    """

    def __init__(self, *, telemetry, generator, checker, guard, guard_counters, read_path,
                 clk_freq, completion_timeout):
        values = {
            "magic": proto.MAGIC, "version": proto.PROTOCOL_VERSION, "clock_hz": int(clk_freq),
        }
        signals = {name: getattr(source, name) for name, _ in proto.TELEMETRY
                   for source in (telemetry, guard_counters) if hasattr(source, name)}
        rd_status = Signal(32)
        self.comb += rd_status.eq(guard.failed * proto.RD_FAILED
                                  | read_path.pending * proto.RD_RESET_PENDING)
        signals.update({
            "rd_status": rd_status,
            "pattern_errors": checker.errors,
            "first_error_offset": checker.first_error_offset,
            "checked_bytes": checker.bytes,
            "generated_bytes": generator.bytes,
            "max_payload_size": telemetry.max_payload_size,
            "max_request_size": telemetry.max_request_size,
            "cycles": telemetry.cycles,
        })
        for name, description in proto.BUSPROBE_CSRS:
            if name == "pattern":
                self.pattern = CSRStorage(8, name=name, description=description)
                self.comb += [
                    generator.pattern.eq(self.pattern.storage),
                    checker.pattern.eq(self.pattern.storage),
                    generator.restart.eq(self.pattern.re),
                    checker.restart.eq(self.pattern.re),
                ]
            elif name == "telemetry_clear":
                self.telemetry_clear = CSRStorage(1, name=name, description=description)
                self.comb += [telemetry.clear.eq(self.telemetry_clear.re),
                              guard_counters.clear.eq(self.telemetry_clear.re)]
            elif name == "read_reset":
                self.read_reset = CSRStorage(1, name=name, description=description)
                self.comb += read_path.request.eq(self.read_reset.re)
            elif name == "completion_timeout":
                self.completion_timeout = CSRStorage(32, name=name, reset=completion_timeout,
                                                     description=description)
                self.comb += guard.timeout_cycles.eq(self.completion_timeout.storage)
            elif name in values:
                setattr(self, name, CSRStatus(32, name=name, reset=values[name],
                                              description=description))
            else:
                csr = CSRStatus(32, name=name, description=description)
                setattr(self, name, csr)
                self.comb += csr.status.eq(signals[name])


class BusprobePCIeSoC(SoCCore):
    """The busprobe PCIe device: endpoint, DMA writer/reader/loopback, MSI, busprobe CSRs, and
    the SoC around them (CPU, ROM, SRAM, UART, timer, link history, firmware mailbox).

    Attributes
    ----------
    pcie_phy, pcie_endpoint, pcie_dma0, pcie_msi, busprobe, link, firmware
        The submodules; the first letters of their names are CSR region names.
    generator : PatternGenerator
    checker : PatternChecker
    telemetry : TLPTelemetry
    rx_guard : RxTlpGuard
        Between the PHY's receive stream and LitePCIe.
    read_path : ReadPathReset
    guard_counters : GuardCounters

    Parameters
    ----------
    platform
        A LiteX platform.
    phy
        A LitePCIe PHY object built on ``platform`` (64-bit datapath, clocked by ``sys``).
    clk_freq : float
        The ``sys`` clock frequency the PHY runs the core at.
    crg : LiteXModule or None
        Clock/reset generator for ``sys``, or None if the caller provides the domain.
    completion_timeout_s : float
        Completion timeout the core starts with (``busprobe_completion_timeout``).
    link_state : dict of Signal
        The link as the PHY reports it: ``ltssm``, ``up``, ``rate``, ``width``,
        ``device_control`` (:class:`~.link_history.LinkHistory`'s inputs).
    firmware : list of int or None
        The ROM's 32-bit words (the firmware image); None leaves a one-word loop (the simulation
        loads the image when it starts, ``sim_top.py``).
    uart_name : str
        LiteX's UART: ``"serial"`` (the board's RS-232 pins) or ``"sim"`` (a byte stream).
    """

    csr_map = dict(proto.CSR_REGIONS)
    mem_map = {"rom": soc.ROM_BASE, "sram": soc.SRAM_BASE, "csr": soc.CSR_BASE}

    def __init__(self, platform, *, phy, link_state, clk_freq=proto.CLOCK_HZ, crg=None,
                 completion_timeout_s=proto.COMPLETION_TIMEOUT_S, firmware=None,
                 uart_name="serial"):
        if phy.data_width != proto.DATA_WIDTH:
            raise ValueError(f"PHY data width {phy.data_width} is not {proto.DATA_WIDTH}")
        if firmware is not None and 4 * len(firmware) > soc.ROM_SIZE:
            raise ValueError(f"firmware of {4 * len(firmware)} bytes does not fit the "
                             f"{soc.ROM_SIZE}-byte ROM")
        SoCCore.__init__(
            self, platform, clk_freq=clk_freq, cpu_type=soc.CPU_TYPE, cpu_variant=soc.CPU_VARIANT,
            # A crossbar, not one shared bus: LiteX's arbiters switch masters only when the one
            # holding the bus drops its request, and the CPU fetching a tight loop from ROM never
            # does (the host's BAR0 accesses then starved). Here the CPU's fetches reach the ROM
            # on their own path, and only the CSR slave is shared, between the CPU's data bus
            # (idle between its loads) and BAR0.
            bus_interconnect="crossbar",
            integrated_rom_size=soc.ROM_SIZE, integrated_rom_init=firmware or [_LOOP],
            integrated_sram_size=soc.SRAM_SIZE, csr_data_width=32, csr_ordering="big", ident="",
            with_uart=True, uart_name=uart_name, uart_baudrate=soc.UART_BAUD, with_timer=True,
            with_ctrl=True)
        if crg is not None:
            self.crg = crg
        self.pcie_phy = phy
        tag_bits = proto.READ_TAGS.bit_length() - 1
        # The receive guard goes between the PHY and LitePCIe: the endpoint connects whatever
        # ``phy.source`` is when it is built, so the guard's output takes that name (the PHY's
        # own logic keeps driving the stream it created, now the guard's input).
        link_rx = phy.source
        self.rx_guard = guard = RxTlpGuard(phy.sink, tag_bits=tag_bits)
        self.comb += [
            link_rx.connect(guard.sink),
            guard.requester_id.eq(phy.id),
            guard.max_payload_size.eq(phy.max_payload_size),
        ]
        phy.source = guard.source
        self.pcie_endpoint = endpoint = LitePCIeEndpoint(
            phy, endianness=phy.endianness, address_width=proto.DMA_ADDRESS_WIDTH,
            max_pending_requests=proto.READ_TAGS)
        bar0 = LitePCIeWishboneMaster(endpoint, base_address=soc.CSR_BASE,
                                      qword_aligned=phy.qword_aligned)
        self.submodules.pcie_wishbone = bar0
        self.bus.add_master(name="pcie", master=bar0.wishbone)

        self.pcie_dma0 = dma = LitePCIeDMA(
            phy, endpoint, address_width=proto.DMA_ADDRESS_WIDTH,
            with_writer=True, with_reader=True, with_loopback=True,
            table_depth=proto.DMA_TABLE_DEPTH)

        self.generator = generator = PatternGenerator(proto.DATA_WIDTH)
        self.checker = checker = PatternChecker(proto.DATA_WIDTH)
        self.comb += [
            generator.enable.eq(dma.writer.enable),
            generator.source.connect(dma.sink),
            # After a failed read the data still on its way is not the host's stream.
            dma.source.connect(checker.sink, omit={"valid"}),
            checker.sink.valid.eq(dma.source.valid & ~guard.failed),
        ]
        self.read_path = read_path = ReadPathReset(phy.sink)
        self.comb += [guard.flush.eq(read_path.reset),
                      *reset_with(read_path.reset, endpoint=endpoint, reader=dma.reader)]

        self.telemetry = telemetry = TLPTelemetry(phy.sink, link_rx, tag_bits=tag_bits)
        self.guard_counters = guard_counters = GuardCounters(guard)
        self.comb += [
            telemetry.max_payload_size.eq(phy.max_payload_size),
            telemetry.max_request_size.eq(phy.max_request_size),
        ]
        self.busprobe = BusprobeCSRs(
            telemetry=telemetry, generator=generator, checker=checker, guard=guard,
            guard_counters=guard_counters, read_path=read_path, clk_freq=clk_freq,
            completion_timeout=round(completion_timeout_s * clk_freq))

        self.link = history = LinkHistory()
        self.comb += [getattr(history, name).eq(signal) for name, signal in link_state.items()]
        self.firmware = mailbox = FirmwareMailbox()

        self.pcie_msi = msi = LitePCIeMSI(width=32)
        failed_before = Signal()
        self.sync += failed_before.eq(guard.failed)
        self.comb += [
            msi.source.connect(phy.msi),
            # A failed read also raises the reader's MSI: the host is waiting on it.
            msi.irqs[proto.MSI_READER].eq(dma.reader.irq | (guard.failed & ~failed_before)),
            msi.irqs[proto.MSI_WRITER].eq(dma.writer.irq),
            msi.irqs[soc.MSI_FIRMWARE].eq(mailbox.irq),
        ]


#: ``jal x0, 0``: what the ROM holds where no firmware image is given.
_LOOP = 0x0000_006F
