"""busprobe's PCIe SoC on the Versa's soft endpoint: ``busprobe build --board versa-ecp5-5g
--design pcie``.

The same SoC as on the AC701 (:class:`~busprobe.gateware.pcie.core.BusprobePCIeSoC`: LitePCIe's
DMA engine, busprobe's CSRs and telemetry, the VexRiscv, its ROM with the firmware image, the
UART) with :class:`~busprobe.gateware.pcie.soft.litepcie_phy.SoftPCIEPHY` as its PHY: one DMA
engine, two PHYs. LiteX writes the SoC as Verilog (:func:`soc_verilog`) with the PHY's pads as
ports (the word link's ``rx_word``/``tx_word``, ``receiver_detected``, the link's state); this
Amaranth design instantiates it in the Versa top's link domain (``sys`` is the link's 62.5 MHz
word clock, as in the Verilator model) and connects the pads to the board's
:class:`~busprobe.gateware.pcie.soft.ecp5_pcie_phy.Ecp5PciePhy`. The Verilog files and the ROM's
image go into the board build as its sources, so yosys synthesizes all of it at once and the
build cache's key covers them.

The PHY's transmit side is always ready inside the SoC (the link sends a word every clock);
the gearbox's FIFO, 16 words deep, never holds it once primed (its tests), and a word it could
not take would show in its counters.
"""


import tempfile
from pathlib import Path

from amaranth import Cat, ClockSignal, Instance, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out
from busprobe.protocol.pcie_ltssm import LtssmState

from ..pcie.soft.litepcie_endpoint import STATUS_OUTPUTS, WORD_BITS
from ..pcie.soft.ltssm import GEN1_WORD_CLOCK_HZ

__all__ = ["VersaPcieSoc", "TOPLEVEL", "PREFIX", "SOC_LEDS", "soc_verilog"]

TOPLEVEL = "busprobe_pcie_versa"
#: The PHY pads' prefix in the SoC top's port names.
PREFIX = "pcie_soft_"
#: What each bit of ``leds`` shows, LED 0 first.
SOC_LEDS = ("physical link up (L0)", "DL_Active", "DCU receiver locked", "receiver detected",
            "Recovery (toggles)", "MSI sent (toggles)", "replay (toggles)", "UART TX")


def _platform():
    """LiteX's view of the SoC's ports (clock, reset, the UART's pins, the PHY's pads), whose
    "build" writes the Verilog and the memories' init files, for the Versa's build to take."""
    from busprobe.gateware.pcie.soft.litepcie_phy import soft_phy_io
    from litex.build.generic_platform import GenericPlatform, Pins, Subsignal

    class VerilogPlatform(GenericPlatform):
        def build(self, fragment, build_dir, build_name, run=False, **kwargs):
            out = Path(build_dir)
            verilog = self.get_verilog(fragment, name=build_name)
            for name, content in verilog.data_files.items():
                (out / name).write_text(content)
            verilog.data_files.clear()
            verilog.write(str(out / f"{build_name}.v"))

    io = [("sys_clk", 0, Pins(1)), ("sys_rst", 0, Pins(1)),
          ("serial", 0, Subsignal("tx", Pins(1)), Subsignal("rx", Pins(1))),
          *soft_phy_io(PREFIX[:-1])]
    return VerilogPlatform("versa", io)


def soc_verilog(*, firmware: "list[int] | None", verilog_dir: Path) -> "dict[str, str]":
    """The SoC's Verilog (module :data:`TOPLEVEL`), the Verilog it needs (the CPU's, the
    endpoint's, cached in ``verilog_dir``) and its memories' init files: file name -> text.
    ``firmware``: the ROM's words (None: a one-word loop)."""
    from busprobe.gateware.pcie.core import BusprobePCIeSoC
    from busprobe.gateware.pcie.soft.litepcie_phy import SoftPCIEPHY
    from busprobe.protocol import pcie as proto
    from litex.build.io import CRG
    from litex.soc.integration.builder import Builder

    platform = _platform()
    crg = CRG(platform.request("sys_clk"), rst=platform.request("sys_rst"))
    phy = SoftPCIEPHY(platform, platform.request(PREFIX[:-1]),
                      verilog_dir=verilog_dir, bar0_size=proto.BAR0_SIZE)
    soc = BusprobePCIeSoC(platform, phy=phy, link_state=phy.link_state,
                          clk_freq=GEN1_WORD_CLOCK_HZ, crg=crg, firmware=firmware,
                          uart_name="serial")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        builder = Builder(soc, output_dir=tmp, gateware_dir=tmp, compile_software=False,
                          compile_gateware=False, csr_json=str(out / "csr.json"))
        builder.build(build_name=TOPLEVEL, run=False)
        files = {f"{TOPLEVEL}.v": (out / f"{TOPLEVEL}.v").read_text()}
        for init in sorted(out.glob("*.init")):
            files[init.name] = init.read_text()
        for path, _, _ in soc.platform.sources:  # the CPU's, the endpoint's
            files[Path(path).name] = Path(path).read_text()
    return files


class VersaPcieSoc(wiring.Component):
    """The SoC (:func:`soc_verilog`) on the Versa's PHY, in ``sync`` (the top's link domain).

    Attributes
    ----------
    leds: Signal(8), output
        Link and SoC status, :data:`SOC_LEDS`.

    Parameters
    ----------
    phy: Ecp5PciePhy
        The board's PHY, its link side in this design's domain.
    firmware: list of int or None
        The ROM's words (``busprobe build`` gives the firmware image the AC701's SoC and the
        simulated one run).
    verilog_dir: Path
        Where the soft endpoint's Verilog is cached.
    """

    leds: Out(8)

    def __init__(self, *, phy, firmware: "list[int] | None", verilog_dir: Path):
        self._phy = phy
        self._firmware, self._verilog_dir = firmware, verilog_dir
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        phy = self._phy
        if platform is not None:
            for name, text in soc_verilog(firmware=self._firmware,
                                          verilog_dir=self._verilog_dir).items():
                platform.add_file(name, text)
            uart = platform.request("uart", 0)
            tx, rx = uart.tx.o, uart.rx.i
        else:
            tx, rx = Signal(), Signal(init=1)

        rx_word, tx_word = Signal(WORD_BITS + 1), Signal(WORD_BITS + 1)
        status = {name: Signal(width, name=f"soc_{name}") for name, width in
                  STATUS_OUTPUTS.items()}
        m.submodules.soc = Instance(
            TOPLEVEL, i_sys_clk=ClockSignal(), i_sys_rst=ResetSignal(),
            o_serial_tx=tx, i_serial_rx=rx,
            **{f"i_{PREFIX}rx_word": rx_word, f"o_{PREFIX}tx_word": tx_word,
               f"i_{PREFIX}receiver_detected": phy.receiver_detected},
            **{f"o_{PREFIX}{name}": signal for name, signal in status.items()})

        # The wire: the gearbox's words in, the link's words out (every clock, see above).
        m.d.comb += [rx_word[WORD_BITS].eq(phy.rx.valid),
                     phy.tx.valid.eq(1),
                     phy.tx.p.symbols.eq(tx_word[:WORD_BITS]),
                     phy.tx_electrical_idle.eq(tx_word[WORD_BITS])]
        for lane in range(WORD_BITS // 9):
            m.d.comb += rx_word[9 * lane:9 * (lane + 1)].eq(phy.rx.p[lane].symbol)

        toggles = []
        for name in ("recoveries", "msi_sent", "replays"):  # a toggle each time one counts
            seen, toggle = Signal(16, name=f"{name}_seen"), Signal(name=f"{name}_toggle")
            m.d.sync += seen.eq(status[name])
            with m.If(seen != status[name]):
                m.d.sync += toggle.eq(~toggle)
            toggles.append(toggle)
        m.d.comb += self.leds.eq(Cat(status["status"][:4] == LtssmState.L0, status["dl_active"],
                                     phy.rx_ready, phy.receiver_detected, *toggles, ~tx))
        return m
