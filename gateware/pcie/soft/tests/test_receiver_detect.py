"""Receiver detection against a model of the DCU's detection port (Amaranth simulation): the
sequence TN1261 asks for, the result kept, a test abandoned when the transmitter is needed."""

from amaranth.sim import Simulator
from busprobe.gateware.pcie.soft.receiver_detect import STROBE_CYCLES, ReceiverDetector

CLOCK_HZ = 125e6
SETTLE = 16  # 120 ns at 125 MHz, rounded up, and the output register's clock


class DcuModel:
    """The channel's detection port as TN1261 describes it: ``pcie_done`` falls a little after
    ``pcie_ct`` rises and rises ``busy`` clocks later with ``pcie_con`` = a receiver is there.
    Records every clock's (det_en, ct) and checks the sequence's rules as it goes."""

    def __init__(self, dut, *, receiver: bool, busy: int = 200, answers: bool = True):
        self.dut, self.receiver, self.busy, self.answers = dut, receiver, busy, answers
        self.trace: list[tuple[int, int]] = []
        self.strobes: list[int] = []  # clocks ct stayed high, one entry per strobe
        self.enabled_before_strobe: list[int] = []

    async def run(self, ctx):
        dut = self.dut
        ctx.set(dut.pcie_done, 1)
        countdown, enabled_for, strobe = None, 0, 0
        while True:
            _, _, det_en, ct = await ctx.tick("pclk").sample(dut.pcie_det_en, dut.pcie_ct)
            self.trace.append((det_en, ct))
            enabled_for = enabled_for + 1 if det_en else 0
            if ct:
                if strobe == 0:
                    self.enabled_before_strobe.append(enabled_for - 1)
                strobe += 1
            elif strobe:
                self.strobes.append(strobe)
                strobe = 0
                if self.answers:
                    ctx.set(dut.pcie_done, 0)
                    countdown = self.busy
            if countdown is not None:
                countdown -= 1
                if countdown == 0:
                    ctx.set(dut.pcie_con, self.receiver)
                    ctx.set(dut.pcie_done, 1)
                    countdown = None


def run(model_options, script):
    dut = ReceiverDetector(clock_hz=CLOCK_HZ, timeout_s=4e-6)
    model = DcuModel(dut, **model_options)
    result = {}

    async def testbench(ctx):
        await script(ctx, dut, result)

    sim = Simulator(dut)
    sim.add_clock(1 / CLOCK_HZ, domain="pclk")
    sim.add_testbench(testbench)
    sim.add_testbench(model.run, background=True)
    sim.run()
    return model, result


async def clocks(ctx, n):
    for _ in range(n):
        await ctx.tick("pclk")


def test_a_receiver_is_found_with_tn1261s_sequence_and_tests_repeat_while_idle():
    async def script(ctx, dut, result):
        ctx.set(dut.tx_electrical_idle, 1)
        await clocks(ctx, 1000)
        result.update(detected=ctx.get(dut.detected), tests=ctx.get(dut.tests))

    model, result = run({"receiver": True}, script)
    assert result["detected"] == 1 and result["tests"] >= 3
    # pcie_det_en 120 ns (15 clocks) before pcie_ct; pcie_ct high four clocks, every time.
    assert model.strobes and set(model.strobes) == {STROBE_CYCLES}
    assert min(model.enabled_before_strobe) >= 15
    # And nothing before the transmitter had been idle 120 ns.
    assert model.trace.index((1, 0)) >= 15


def test_no_receiver_is_reported_as_none_and_a_silent_dcu_times_out_as_none():
    async def script(ctx, dut, result):
        ctx.set(dut.tx_electrical_idle, 1)
        await clocks(ctx, 1000)
        result.update(detected=ctx.get(dut.detected), timeouts=ctx.get(dut.timeouts))

    _, result = run({"receiver": False}, script)
    assert result == {"detected": 0, "timeouts": 0}
    _, result = run({"receiver": True, "answers": False}, script)
    assert result["detected"] == 0 and result["timeouts"] >= 1


def test_leaving_electrical_idle_abandons_a_test_and_keeps_the_last_result():
    async def script(ctx, dut, result):
        ctx.set(dut.tx_electrical_idle, 1)
        await clocks(ctx, 200)  # one test done (found), the next one under way
        result["before"] = ctx.get(dut.detected), ctx.get(dut.tests), ctx.get(dut.pcie_det_en)
        ctx.set(dut.tx_electrical_idle, 0)
        await clocks(ctx, 2)
        result["outputs"] = ctx.get(dut.pcie_det_en), ctx.get(dut.pcie_ct)
        await clocks(ctx, 500)
        result["after"] = ctx.get(dut.detected), ctx.get(dut.tests)

    model, result = run({"receiver": True, "busy": 100}, script)
    assert result["before"] == (1, 1, 1)  # found once, the second test's det_en high
    assert result["outputs"] == (0, 0) and result["after"] == (1, 1)
    assert all(trace == (0, 0) for trace in model.trace[210:])
