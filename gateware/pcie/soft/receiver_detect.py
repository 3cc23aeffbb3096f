"""Receiver detection (§4.2.6.1.2, Detect.Active) on an ECP5 DCU channel, TN1261's sequence."""

from math import ceil

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["ReceiverDetector"]

#: TN1261 (ECP5 and ECP5-5G SERDES/PCS Usage Guide), receiver detection, as Yumewatari's and
#: ECP5-PCIe's DCU wrappers quote it: the test may start 120 ns after the transmitter went to
#: electrical idle; ``pcie_det_en`` must then be high 120 ns before ``pcie_ct``, which is held
#: for four byte clocks; the DCU drops ``pcie_done`` and raises it again when ``pcie_con`` holds
#: the result.
SETTLE_S = 120e-9
STROBE_CYCLES = 4


class ReceiverDetector(wiring.Component):
    """Runs the DCU's receiver detection over and over while the transmitter is in electrical
    idle, and keeps the last result.

    The LTSSM looks at ``receiver_detected`` for one clock in Detect.Active, after at least
    Detect.Quiet's electrical idle (12 ms, or until the receiver leaves idle): a detection that
    takes microseconds and repeats through that time has a result ready then, without a
    request/answer handshake between the two clocks. Leaving electrical idle abandons a test
    under way (the transmitter is needed) and keeps the last result. A DCU that never answers
    within ``timeout_s`` counts as no receiver, and in ``timeouts``.

    Attributes
    ----------
    tx_electrical_idle: Signal(), input
        The transmitter is in electrical idle (this clock's domain).
    pcie_det_en, pcie_ct: Signal(), output
        To the DCU channel's ``FFC_PCIE_DET_EN`` and ``FFC_PCIE_CT``, from registers.
    pcie_done, pcie_con: Signal(), input
        From its ``FFS_PCIE_DONE`` and ``FFS_PCIE_CON`` (asynchronous; synchronised here).
    detected: Signal(), output
        The last finished test found a receiver.
    tests, timeouts: Signal(16), output
        Tests finished, and those the DCU did not answer (wrapping).

    Parameters
    ----------
    clock_hz: float
        This domain's clock (the DCU's 125 MHz fabric clock at 2.5 GT/s).
    domain: str
    timeout_s: float
        The longest wait for ``pcie_done`` to fall and rise again.
    """

    tx_electrical_idle: In(1)
    pcie_det_en: Out(1)
    pcie_ct: Out(1)
    pcie_done: In(1)
    pcie_con: In(1)
    detected: Out(1)
    tests: Out(16)
    timeouts: Out(16)

    def __init__(self, *, clock_hz: float = 125e6, domain: str = "pclk",
                 timeout_s: float = 50e-6):
        self._settle = ceil(SETTLE_S * clock_hz) + 1  # + 1: the registered output's clock
        self._timeout = ceil(timeout_s * clock_hz)
        self._domain = domain
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        domain = self._domain
        done, con = Signal(), Signal()
        m.submodules.done_sync = FFSynchronizer(self.pcie_done, done, o_domain=self._domain)
        m.submodules.con_sync = FFSynchronizer(self.pcie_con, con, o_domain=self._domain)
        timer = Signal(range(max(self._settle, self._timeout, STROBE_CYCLES) + 1))

        def wait(cycles, then):
            with m.If(timer + 1 >= cycles):
                m.d[domain] += timer.eq(0)
                m.next = then
            with m.Else():
                m.d[domain] += timer.eq(timer + 1)

        def abandon_without_idle():
            """Leaving electrical idle ends a test at once (its answer is not waited for)."""
            with m.If(~self.tx_electrical_idle):
                m.d[domain] += [timer.eq(0), self.pcie_det_en.eq(0), self.pcie_ct.eq(0)]
                m.next = "IDLE"

        with m.FSM(domain=self._domain):
            with m.State("IDLE"):  # the transmitter has to be idle 120 ns first
                m.d[domain] += [self.pcie_det_en.eq(0), self.pcie_ct.eq(0)]
                with m.If(self.tx_electrical_idle):
                    wait(self._settle, "ENABLE")
                with m.Else():
                    m.d[domain] += timer.eq(0)
            with m.State("ENABLE"):  # pcie_det_en 120 ns before the strobe
                m.d[domain] += self.pcie_det_en.eq(1)
                wait(self._settle, "STROBE")
                abandon_without_idle()
            with m.State("STROBE"):
                m.d[domain] += self.pcie_ct.eq(1)
                wait(STROBE_CYCLES, "DONE_LOW")
                abandon_without_idle()
            with m.State("DONE_LOW"):  # done is seen high for a few clocks after the strobe
                m.d[domain] += self.pcie_ct.eq(0)
                with m.If(~done):
                    m.d[domain] += timer.eq(0)
                    m.next = "DONE_HIGH"
                with m.Else():
                    wait(self._timeout, "TIMEOUT")
                abandon_without_idle()
            with m.State("DONE_HIGH"):
                with m.If(done):
                    m.d[domain] += [timer.eq(0), self.detected.eq(con),
                                    self.tests.eq(self.tests + 1)]
                    m.next = "IDLE"
                with m.Else():
                    wait(self._timeout, "TIMEOUT")
                abandon_without_idle()
            with m.State("TIMEOUT"):
                m.d[domain] += [self.detected.eq(0), self.tests.eq(self.tests + 1),
                         self.timeouts.eq(self.timeouts + 1)]
                m.next = "IDLE"
        return m
