"""cocotbext-pcie's ``Port`` on a symbol-level link: its TLPs and DLLPs framed onto the
:class:`~.partner.RootPortPartner`'s wire, the partner's packets back as ``Tlp``/``Dllp``.

The ``Port`` keeps what a data link layer keeps (sequence numbers, the retry buffer, ACK/NAK,
flow-control initialisation and UpdateFC, credits); :class:`SymbolPort` adds what an
object-level link never needs: LCRC and DLLP CRC (framed and checked by
:mod:`busprobe.protocol.pcie_dll`'s reference functions), a NAK for a TLP whose LCRC was bad,
and a transmitter paced by the wire (a packet is handed on when the partner has sent the last
one). Training, SKP sets and ordered sets are the partner's.
"""

from __future__ import annotations

import cocotb
from busprobe.protocol.pcie_dll import FramedPacket, frame_dllp, frame_tlp
from cocotb.queue import Queue
from cocotb.triggers import Event
from cocotbext.pcie.core.dllp import Dllp
from cocotbext.pcie.core.port import PCIE_GEN_SYMB_TIME, Port, SimPort, get_max_update_latency
from cocotbext.pcie.core.tlp import Tlp

from .partner import RootPortPartner

__all__ = ["SymbolPort", "park_unused_port"]

#: The receive credits cocotbext-pcie's own root ports advertise (``SwitchDownstreamPort``:
#: PH, PD, NPH, NPD, CplH, CplD).
ROOT_PORT_FC_INIT = (64, 1024, 64, 64, 64, 1024)


class SymbolPort(Port):
    """A root port's data link layer (cocotbext-pcie's) over :class:`RootPortPartner` symbols.

    Give it to a root complex with ``rc.make_port(port=SymbolPort(...))`` and clock
    :meth:`symbol_time` once per symbol time from a cocotb coroutine, with what the endpoint
    sent; it returns what the partner sends back. The link is Gen1 x1: a symbol is 4 ns and
    the ACK latency timer is the formula's 237 symbol times for MPS 128.

    Attributes
    ----------
    partner: the :class:`RootPortPartner` (its ``dll`` is this port).
    received: every packet the partner found in L0, as judged (``FramedPacket``).
    bad_tlps, bad_dllps: TLPs NAKed for a bad LCRC (or malformed), DLLPs dropped for a bad CRC.

    Parameters
    ----------
    fc_init: receive credits advertised (PH, PD, NPH, NPD, CplH, CplD; 0 is infinite).
    partner_options: keyword arguments for :class:`RootPortPartner` (``link``, ``lane``, ...).
    """

    def __init__(self, fc_init=ROOT_PORT_FC_INIT, **partner_options) -> None:
        self.partner = RootPortPartner(dll=self, data_link=False, **partner_options)
        self.received: list[FramedPacket] = []
        self.bad_tlps = 0
        self.bad_dllps = 0
        self._in_l0 = Event()
        self._sent = Event()
        self._arrived: Queue = Queue()
        super().__init__(fc_init=[list(fc_init)] * 8)
        # What SimPort._connect_int would set for a Gen1 x1 link.
        self.max_link_speed = self.cur_link_speed = 1
        self.max_link_width = self.cur_link_width = 1
        self.max_latency_timer_steps = int(
            get_max_update_latency(self.max_payload_size, 1, 1) * PCIE_GEN_SYMB_TIME[1]
            * self.time_scale)
        cocotb.start_soon(self._run_arrivals())

    # The wire. --------------------------------------------------------------------------------
    def symbol_time(self, rx: int | None) -> int | None:
        """One symbol time: the partner takes ``rx`` (None: electrical idle), gives its own."""
        symbol = self.partner.step(rx)
        if self.partner.idle_outbox:
            self._sent.set()
        return symbol

    async def handle_tx(self, pkt: Tlp | Dllp) -> None:
        """Frame ``pkt`` for the partner once the link is in L0; return when it has been sent."""
        await self._in_l0.wait()
        if isinstance(pkt, Dllp):
            symbols = frame_dllp(bytes(pkt.pack()))
        else:
            symbols = frame_tlp(pkt.seq, bytes(pkt.pack()))
        self._sent.clear()
        self.partner.send_symbols(symbols)
        await self._sent.wait()

    # The partner's data link layer interface (partner_dll.DataLinkLayer). ---------------------
    def link_up(self) -> None:
        self._in_l0.set()

    def link_down(self) -> None:
        # Port has no DL_Down (it never resets its sequence numbers or credits): a test that
        # takes the link down ends what this port can follow.
        self._in_l0.clear()

    def next_dllp(self) -> bytes | None:
        return None  # every DLLP comes from Port's transmit loop through handle_tx

    def next_tlp(self) -> tuple[int, bytes] | None:
        return None  # so does every TLP

    def on_packet(self, packet: FramedPacket) -> None:
        """A packet the partner deframed (called from :meth:`symbol_time`, so not a coroutine:
        queued for :meth:`_run_arrivals`, which keeps their order)."""
        self.received.append(packet)
        if packet.status == "nullified":
            return  # §3.5.3.1: discarded silently
        if packet.status != "good":
            if packet.kind == "tlp":
                self.bad_tlps += 1
                # Port receives objects, never a corrupted TLP: schedule the NAK its
                # out-of-sequence branch would (§3.5.3.1).
                if not self.nak_scheduled:
                    self.nak_scheduled = True
                    self.stop_ack_latency_timer()
                    self.send_ack.set()
            else:
                self.bad_dllps += 1
            return
        if packet.kind == "tlp":
            tlp = Tlp.unpack(packet.payload)
            tlp.seq = packet.seq
            self._arrived.put_nowait(tlp)
        else:
            self._arrived.put_nowait(Dllp.unpack(packet.payload))

    async def _run_arrivals(self) -> None:
        while True:
            await self.ext_recv(await self._arrived.get())


def park_unused_port(port: SimPort) -> None:
    """Connect a ``SimPort`` nothing will use to a second one, so that both sit idle.

    cocotbext-pcie's root port builds a ``SimPort`` in its constructor and starts its tasks
    (no handle to stop them); replaced by ``set_downstream_port``, the orphan still tries to
    send its InitFC DLLPs and fails the test with "Port not connected". Connected to a peer,
    the two initialise flow control with each other and then wait; their idle timers are set
    to a simulated hour (as :mod:`busprobe.sim.pcie.handover` does for the same reason).
    """
    peer = SimPort()
    for each in (port, peer):
        each.fc_idle_timer_steps = 3600 * each.time_scale
    port.connect(peer)
