"""A LitePCIe PHY whose link side is top-level ports, for simulation (Migen).

It offers the core exactly what :class:`litepcie.phy.s7pciephy.S7PCIEPHY` offers at
``data_width=64``: streams, ``id``, ``max_payload_size``/``max_request_size``, ``msi``,
``bar0_mask``, ``endianness = "big"``, ``qword_aligned = False``, and the same CSRs with the same
names and order, so the core and its CSR map are identical on the board and in simulation. The
other side of the ports is :class:`busprobe.sim.pcie.tlp_stream.TlpStreamEndpoint`.

Pads (``pads`` from the platform; directions seen from the design)::

    rx_valid/ready/first/last, rx_dat[64], rx_be[8]   input stream: TLPs from the link
    tx_valid/ready/first/last, tx_dat[64], tx_be[8]   output stream: TLPs to the link
    msi_valid, msi_ready, msi_dat[8]                  MSI request (vector in dat)
    req_id[16]                                        input: bus/device/function of this function
    max_payload_size[16], max_request_size[16]        input: negotiated sizes in bytes
    bus_master_enable, msi_enable, link_up            input: config-space state
    ltssm[6], link_rate[2], link_width[2]             input: the hard IP's LTSSM state (7-series
                                                      encoding), speed (gen - 1), width (log2)
    device_control[16]                                input: the Device Control register

Beat format (as the 7-series 64-bit AXI-Stream interface): the TLP's DWs in order, two per beat,
the first in ``dat[0:32]``; each DW is the 32-bit big-endian value of its four wire bytes; ``be``
has one bit per byte (``0x0F`` on a last beat holding one DW).
"""

from __future__ import annotations

from litepcie.common import get_bar_mask, msi_layout, phy_layout
from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litex.soc.interconnect.csr import CSRField, CSRStatus
from migen import If, Signal

__all__ = ["SimPCIEPHY", "sim_phy_io", "add_phy_interface"]

#: LitePCIe sizes its buffers for at most this MPS/MRRS (``litepcie.tlp.common``); the 7-series
#: PHY caps the negotiated values the same way.
MAX_SIZE = 512


def add_phy_interface(phy, *, data_width: int, bar0_size: int) -> None:
    """Give ``phy`` (a LiteXModule) what S7PCIEPHY offers the core at ``data_width``: the TLP
    streams and the MSI stream, its six CSRs with the same names in the same order (one CSR map
    for the board and every simulated PHY), the BAR0 mask, ``id`` and the negotiated sizes."""
    phy.sink = stream.Endpoint(phy_layout(data_width))
    phy.source = stream.Endpoint(phy_layout(data_width))
    phy.msi = stream.Endpoint(msi_layout())
    phy._link_status = CSRStatus(fields=[
        CSRField("status", size=1, description="Link up."),
        CSRField("rate", size=1, description="0: 2.5 Gb/s, 1: 5.0 Gb/s."),
        CSRField("width", size=2, description="Lanes, log2."),
        CSRField("ltssm", size=6, description="LTSSM state"),
    ])
    phy._msi_enable = CSRStatus(description="MSI Enable Status. ``1``: MSI is enabled.")
    phy._msix_enable = CSRStatus(description="MSI-X Enable Status. ``1``: MSI-X is enabled.")
    phy._bus_master_enable = CSRStatus(description="Bus Mastering Status.")
    phy._max_request_size = CSRStatus(16, description="Negotiated Max Request Size (bytes).")
    phy._max_payload_size = CSRStatus(16, description="Negotiated Max Payload Size (bytes).")
    phy.data_width = data_width
    phy.bar0_size = bar0_size
    phy.bar0_mask = get_bar_mask(bar0_size)
    phy.id = Signal(16)
    phy.max_request_size = Signal(16)
    phy.max_payload_size = Signal(16)


def sim_phy_io(name="pcie_sim", data_width=64):
    """Platform IO description of the pads above."""
    from litex.build.generic_platform import Pins, Subsignal

    def pins(n):
        return Pins(n)

    subsignals = []
    for side in ("rx", "tx"):
        subsignals += [
            Subsignal(f"{side}_valid", pins(1)), Subsignal(f"{side}_ready", pins(1)),
            Subsignal(f"{side}_first", pins(1)), Subsignal(f"{side}_last", pins(1)),
            Subsignal(f"{side}_dat", pins(data_width)),
            Subsignal(f"{side}_be", pins(data_width // 8)),
        ]
    subsignals += [
        Subsignal("msi_valid", pins(1)), Subsignal("msi_ready", pins(1)),
        Subsignal("msi_dat", pins(8)),
        Subsignal("req_id", pins(16)),
        Subsignal("max_payload_size", pins(16)), Subsignal("max_request_size", pins(16)),
        Subsignal("bus_master_enable", pins(1)), Subsignal("msi_enable", pins(1)),
        Subsignal("link_up", pins(1)),
        Subsignal("ltssm", pins(6)), Subsignal("link_rate", pins(2)),
        Subsignal("link_width", pins(2)), Subsignal("device_control", pins(16)),
    ]
    return [(name, 0, *subsignals)]


class SimPCIEPHY(LiteXModule):
    """LitePCIe PHY interface on top-level ports.

    Attributes
    ----------
    sink : stream.Endpoint(phy_layout), input
        TLP beats from the core, driven onto ``pads.tx_*``.
    source : stream.Endpoint(phy_layout), output
        TLP beats from ``pads.rx_*`` to the core.
    msi : stream.Endpoint(msi_layout), input
        MSI requests from the core.
    id, max_payload_size, max_request_size : Signal(16), output
        From the pads; sizes clamped to 128..512 like the 7-series PHY.
    link_state : dict of Signal, output
        ``ltssm``, ``up``, ``rate``, ``width``, ``device_control`` for
        :class:`~busprobe.gateware.pcie.link_history.LinkHistory` (the board's target takes the
        same from the hard IP).

    Parameters
    ----------
    pads
        The platform pads of :func:`sim_phy_io`.
    data_width : int
        Datapath width (64 like the Gen2 x1 7-series PHY).
    bar0_size : int
        BAR0 size in bytes (decoded by the core's depacketizer).
    """

    endianness = "big"
    qword_aligned = False

    def __init__(self, pads, *, data_width=64, bar0_size=0x10000):
        add_phy_interface(self, data_width=data_width, bar0_size=bar0_size)
        self.link_state = {"ltssm": pads.ltssm, "up": pads.link_up, "rate": pads.link_rate,
                           "width": pads.link_width, "device_control": pads.device_control}

        def clamp(dst, src):
            return If(src > MAX_SIZE, dst.eq(MAX_SIZE)).Elif(src < 128, dst.eq(128)).Else(
                dst.eq(src))

        self.comb += [
            # Link to core.
            self.source.valid.eq(pads.rx_valid),
            pads.rx_ready.eq(self.source.ready),
            self.source.first.eq(pads.rx_first),
            self.source.last.eq(pads.rx_last),
            self.source.dat.eq(pads.rx_dat),
            self.source.be.eq(pads.rx_be),
            # Core to link.
            pads.tx_valid.eq(self.sink.valid),
            self.sink.ready.eq(pads.tx_ready),
            pads.tx_first.eq(self.sink.first),
            pads.tx_last.eq(self.sink.last),
            pads.tx_dat.eq(self.sink.dat),
            pads.tx_be.eq(self.sink.be),
            # MSI.
            pads.msi_valid.eq(self.msi.valid),
            self.msi.ready.eq(pads.msi_ready),
            pads.msi_dat.eq(self.msi.dat),
            # Configuration.
            self.id.eq(pads.req_id),
            clamp(self.max_payload_size, pads.max_payload_size),
            clamp(self.max_request_size, pads.max_request_size),
            self._link_status.fields.status.eq(pads.link_up),
            self._link_status.fields.rate.eq(pads.link_rate[0]),
            self._link_status.fields.width.eq(pads.link_width),
            self._link_status.fields.ltssm.eq(pads.ltssm),
            self._msi_enable.status.eq(pads.msi_enable),
            self._bus_master_enable.status.eq(pads.bus_master_enable),
            self._max_request_size.status.eq(self.max_request_size),
            self._max_payload_size.status.eq(self.max_payload_size),
        ]
