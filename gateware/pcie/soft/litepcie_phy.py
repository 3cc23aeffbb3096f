"""A LitePCIe PHY whose inside is busprobe's soft PCIe Gen1 x1 endpoint (Migen).

It offers the core what :class:`~busprobe.gateware.pcie.sim_phy.SimPCIEPHY` (and so
LitePCIe's ``S7PCIEPHY`` at ``data_width=64``) offers: ``sink``/``source`` of
``phy_layout(64)``, ``id``, ``max_payload_size``/``max_request_size`` (clamped to 128..512 as
LitePCIe wants), ``msi``, ``bar0_mask``, ``endianness = "big"``, ``qword_aligned = False``,
``link_state`` and the same CSRs in the same order (one CSR map). Behind them is
:class:`~busprobe.gateware.pcie.soft.litepcie_endpoint.SoftLitePcieEndpoint` (Amaranth),
turned into Verilog once per source hash (:func:`~busprobe.gateware.verilog_cache.cached_verilog`),
added to the platform's sources and instantiated.

Pads (``pads`` from the platform, :func:`soft_phy_io`; directions seen from the design)::

    rx_word[37]            input: a word of four symbols from the link partner, lane 0 in
                           bits 8:0, each ``{k, byte}``, and ``present`` in bit 36
    tx_word[37]            output: the word to it, ``electrical idle`` in bit 36
    receiver_detected      input: a receiver is on the far end of the lane
    dl_active, status, ...  outputs: the endpoint's state and counters
                            (:data:`~.litepcie_endpoint.STATUS_OUTPUTS`)

After the CSRs every PHY has come the link's own (:data:`busprobe.protocol.pcie.SOFT_LINK_CSRS`:
a constant saying they exist, the LTSSM's status word, the counters), so the host reads the
link's state and faults through BAR0.

One clock: ``sys`` is the link's word clock (62.5 MHz at Gen1 x1: a word of four symbols each
way every clock, as Xilinx's Gen1 x1 64-bit user clock; LitePCIe's 64-bit beats then carry
twice what the lane does). A board puts the DCU's PHY wrapper (:mod:`.ecp5_pcie_phy`) on the
pads' side.
"""

from __future__ import annotations

from pathlib import Path

from busprobe.protocol import pcie as proto
from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStatus
from migen import ClockSignal, If, Instance, ResetSignal, Signal

from ..sim_phy import MAX_SIZE, add_phy_interface
from .litepcie_endpoint import STATUS_OUTPUTS, WORD_BITS

__all__ = ["SoftPCIEPHY", "soft_phy_io", "MODULE"]

#: The Verilog module of the Amaranth endpoint.
MODULE = "soft_litepcie"
_PAD_PORTS = {"rx_word": WORD_BITS + 1, "tx_word": WORD_BITS + 1, "receiver_detected": 1,
              **STATUS_OUTPUTS}


def soft_phy_io(name: str = "pcie_soft") -> list:
    """Platform IO description of the pads above."""
    from litex.build.generic_platform import Pins, Subsignal

    return [(name, 0, *(Subsignal(pad, Pins(width)) for pad, width in _PAD_PORTS.items()))]


class SoftPCIEPHY(LiteXModule):
    """LitePCIe PHY interface on the soft endpoint.

    Attributes
    ----------
    sink, source, msi, id, max_payload_size, max_request_size, link_state
        As :class:`~busprobe.gateware.pcie.sim_phy.SimPCIEPHY`'s. ``link_state["ltssm"]`` is
        the soft LTSSM's state number (:class:`busprobe.protocol.pcie_ltssm.LtssmState`), not
        the 7-series encoding; ``device_control`` is not read back (0).

    Parameters
    ----------
    platform
        The LiteX platform the endpoint's Verilog is added to.
    pads
        The platform pads of :func:`soft_phy_io`.
    verilog_dir : Path
        Where the endpoint's Verilog is cached (``<name>-<hash>.v``).
    timing : LtssmTiming or None
        The LTSSM's timeouts in word clocks (None: the spec's at 62.5 MHz).
    digest_files : sequence of Path
        Files the Verilog also depends on (where ``timing`` comes from): part of its hash.
    data_width : int
        64, the only width the beat conversion does.
    bar0_size : int
        BAR0 size in bytes (decoded by the core's depacketizer; the endpoint's router decodes
        :data:`busprobe.protocol.pcie.BAR0_SIZE`).
    link_options
        For :class:`~.data_link.SoftDataLink` (``ack_latency``, ``replay_timeout``).
    """

    endianness = "big"
    qword_aligned = False

    def __init__(self, platform, pads, *, verilog_dir: Path, timing=None, digest_files=(),
                 data_width: int = 64, bar0_size: int = 0x10000, **link_options):
        if data_width != 64:
            raise ValueError("the soft endpoint's beats are 64 bits")
        # What S7PCIEPHY and SimPCIEPHY offer, their CSRs in the same order.
        add_phy_interface(self, data_width=data_width, bar0_size=bar0_size)
        # Then the soft link's own registers (busprobe.protocol.pcie.SOFT_LINK_CSRS), which the
        # other PHYs do not have: the same offsets in the same region.
        soft_link = []
        for name, description in proto.SOFT_LINK_CSRS:
            register = CSRStatus(32, name=name, description=description)
            setattr(self, f"_{name}", register)
            soft_link.append((name, register))

        payload_size, request_size = Signal(16), Signal(16)
        bus_master, msi_enable = Signal(), Signal()
        ltssm, link_up = Signal(6), Signal()
        self.link_state = {"ltssm": ltssm, "up": link_up, "rate": Signal(2),
                           "width": Signal(2), "device_control": Signal(16)}

        self.specials += Instance(
            MODULE, i_clk=ClockSignal("sys"), i_rst=ResetSignal("sys"),
            **{f"{'i' if name in ('rx_word', 'receiver_detected') else 'o'}_{name}":
               getattr(pads, name) for name in _PAD_PORTS},
            o_rx_valid=self.source.valid, i_rx_ready=self.source.ready,
            o_rx_first=self.source.first, o_rx_last=self.source.last,
            o_rx_dat=self.source.dat, o_rx_be=self.source.be,
            i_tx_valid=self.sink.valid, o_tx_ready=self.sink.ready, i_tx_last=self.sink.last,
            i_tx_dat=self.sink.dat, i_tx_be=self.sink.be,
            i_msi_valid=self.msi.valid, o_msi_ready=self.msi.ready, i_msi_dat=self.msi.dat,
            o_req_id=self.id, o_max_payload_size=payload_size,
            o_max_request_size=request_size, o_bus_master=bus_master, o_msi_enable=msi_enable,
        )
        platform.add_source(str(_verilog(verilog_dir, timing, digest_files, link_options)))

        def clamp(dst, src):
            return If(src > MAX_SIZE, dst.eq(MAX_SIZE)).Elif(src < 128, dst.eq(128)).Else(
                dst.eq(src))

        # The status word: state in bits 0-3, LinkUp in bit 4 (LINK_STATUS_FIELDS).
        self.comb += [
            ltssm.eq(pads.status[:4]),
            link_up.eq(pads.dl_active),
            clamp(self.max_payload_size, payload_size),
            clamp(self.max_request_size, request_size),
            self._link_status.fields.status.eq(link_up),
            self._link_status.fields.rate.eq(0),  # Gen1
            self._link_status.fields.width.eq(0),  # x1
            self._link_status.fields.ltssm.eq(ltssm),
            self._msi_enable.status.eq(msi_enable),
            self._bus_master_enable.status.eq(bus_master),
            self._max_request_size.status.eq(self.max_request_size),
            self._max_payload_size.status.eq(self.max_payload_size),
        ]
        for name, register in soft_link:
            value = (proto.SOFT_LINK_MAGIC if name == "soft_link" else getattr(pads, name))
            self.comb += register.status.eq(value)


def _verilog(verilog_dir: Path, timing, digest_files, link_options: dict) -> Path:
    """The endpoint's Verilog, written once per source hash."""
    from ...verilog_cache import cached_verilog
    from .litepcie_endpoint import SoftLitePcieEndpoint

    options = sorted(link_options.items())
    return cached_verilog(
        Path(verilog_dir), MODULE, lambda: SoftLitePcieEndpoint(timing=timing, **link_options),
        packages=["busprobe.gateware.pcie.soft", "busprobe.protocol"],
        files=[*map(Path, digest_files)], extra=repr(options))
