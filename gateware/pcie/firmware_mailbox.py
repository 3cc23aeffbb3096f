"""The mailbox between the host tool and the SoC's firmware: plain registers both can write.

The host (through BAR0) and the CPU are both masters of the CSR bus, so the mailbox needs no
logic of its own: :data:`busprobe.protocol.pcie_soc.FIRMWARE_CSRS` are storage registers, and
the firmware's write to ``irq`` raises the MSI the host waits on.
"""

from __future__ import annotations

from busprobe.protocol import pcie_soc as soc
from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStorage
from migen import Signal

__all__ = ["FirmwareMailbox"]


class FirmwareMailbox(LiteXModule):
    """The ``firmware`` CSR block.

    Attributes
    ----------
    irq : Signal(), output
        One cycle high when the firmware writes ``firmware_irq``.
    reg_<name> : CSRStorage
        The registers of :data:`~busprobe.protocol.pcie_soc.FIRMWARE_CSRS`.
    """

    def __init__(self):
        self.irq = Signal()
        for name, description in soc.FIRMWARE_CSRS:
            # ``reg_<name>``: the attribute ``irq`` is the strobe; CSRs are named by ``name=``.
            setattr(self, f"reg_{name}", CSRStorage(32, name=name, description=description))
        self.comb += self.irq.eq(self.reg_irq.re)
