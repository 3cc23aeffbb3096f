"""The link's history: LTSSM state, speed, width, MPS and MRRS changes, time-stamped (Migen).

LitePCIe asks this of its users' boards (litepcie #87/#88, PR #91, pcie_screamer #7): a link
that never trains, trains at the wrong speed or width, or runs with a small MPS leaves nothing
to read once it is up. LitePCIe's own ``LTSSMTracer`` keeps old/new LTSSM pairs in a FIFO that
reading empties, without time, speed, width or sizes; this block keeps the whole state word
(:data:`busprobe.protocol.pcie_soc.LINK_FIELDS`) with the core cycle of each change, in a RAM the
firmware and the host read without disturbing it.

A change is taken when the new word has been the same for two cycles: the hard IP's status
crosses into the core clock through one synchroniser per bit (``MultiReg``), so a word changing
in several bits can show a mix for one cycle, which is never recorded.
"""

from __future__ import annotations

from busprobe.protocol import pcie_soc as soc
from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStatus, CSRStorage
from migen import Cat, If, Memory, Signal

__all__ = ["LinkHistory"]


class LinkHistory(LiteXModule):
    """Time-stamped changes of the link state word, the last ``LINK_HISTORY_DEPTH`` kept.

    Attributes
    ----------
    ltssm : Signal(6), input
        ``pl_ltssm_state`` of the 7-series hard IP
        (:data:`~busprobe.protocol.pcie_soc.LTSSM_7SERIES`).
    up : Signal(), input
        Link up.
    rate : Signal(2), input
        Generation minus one.
    width : Signal(2), input
        log2 of the lanes.
    device_control : Signal(16), input
        The Device Control register as the host programmed it (MPS in bits 5-7, MRRS in 12-14).
    current : Signal(32), output
        The current state word.

    state, time, count, select, entry_time, entry_state : CSR
        :data:`busprobe.protocol.pcie_soc.LINK_CSRS`, in that order.
    """

    def __init__(self):
        self.ltssm = Signal(6)
        self.up = Signal()
        self.rate = Signal(2)
        self.width = Signal(2)
        self.device_control = Signal(16)
        self.current = Signal(32)

        fields = {"ltssm": self.ltssm, "up": self.up, "rate": self.rate, "width": self.width,
                  "mps": self.device_control[5:8], "mrrs": self.device_control[12:15]}
        words = []
        position = 0
        for name, lsb, bits, _ in soc.LINK_FIELDS:
            assert lsb == position, "LINK_FIELDS are packed from bit 0"
            words.append(fields[name])
            position += bits
        self.comb += self.current.eq(Cat(*words))

        time = Signal(64)
        count = Signal(32)
        before = Signal(32)  # the word a cycle ago
        recorded = Signal(32, reset=0xFFFF_FFFF)  # no word has these bits: the first is taken
        take = Signal()
        self.sync += [time.eq(time + 1), before.eq(self.current)]
        self.comb += take.eq((self.current == before) & (before != recorded))

        depth = soc.LINK_HISTORY_DEPTH
        index_bits = (depth - 1).bit_length()
        memory = Memory(96, depth, name="link_history")
        write = memory.get_port(write_capable=True)
        read = memory.get_port(has_re=False)
        self.specials += memory, write, read
        self.comb += [
            write.adr.eq(count[:index_bits]),
            write.dat_w.eq(Cat(time, before)),
            write.we.eq(take),
        ]
        self.sync += If(take, recorded.eq(before), count.eq(count + 1))

        for name, bits, description in soc.LINK_CSRS:
            if name == "select":
                csr = CSRStorage(bits, name=name, description=description)
                self.comb += read.adr.eq(csr.storage[:index_bits])
            else:
                csr = CSRStatus(bits, name=name, description=description)
                value = {"state": self.current, "time": time, "count": count,
                         "entry_time": read.dat_r[:64], "entry_state": read.dat_r[64:]}[name]
                self.comb += csr.status.eq(value)
            setattr(self, name, csr)
