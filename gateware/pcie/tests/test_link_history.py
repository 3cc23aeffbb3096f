"""The link history records each settled change of the link state word with its cycle, keeps the
last LINK_HISTORY_DEPTH, and never a word that lasted one cycle (Migen simulation)."""

from busprobe.gateware.pcie.link_history import LinkHistory
from busprobe.protocol import pcie_soc as soc
from migen.sim import run_simulation

L0, DETECT, RECOVERY = 0x16, 0x00, 0x1C


def word(ltssm, up=0, rate=0, mps=0, mrrs=2):
    return ltssm | up << 6 | rate << 7 | mps << 11 | mrrs << 14


def read_history(dut):
    count = yield dut.count.status
    entries = []
    for index in range(max(0, count - soc.LINK_HISTORY_DEPTH), count):
        yield dut.select.storage.eq(index)
        yield
        yield  # the RAM's registered read
        entries.append(((yield dut.entry_time.status), (yield dut.entry_state.status)))
    return count, entries


def test_changes_are_stamped_and_a_one_cycle_mix_is_not_recorded():
    dut = LinkHistory()
    dut.device_control.reset = 2 << 12  # Device Control's reset value: MRRS 512, MPS 128
    seen = {}

    def bench():
        for _ in range(10):
            yield
        yield dut.ltssm.eq(RECOVERY)  # a word mixed for one cycle by the synchronisers
        yield
        yield dut.ltssm.eq(L0)
        yield dut.up.eq(1)
        for _ in range(10):
            yield
        yield dut.rate.eq(1)
        yield dut.device_control.eq(1 << 5 | 2 << 12)  # the host sets MPS 256
        for _ in range(10):
            yield
        seen["now"] = yield dut.time.status
        seen["history"] = yield from read_history(dut)
        seen["state"] = yield dut.current

    run_simulation(dut, bench())
    count, entries = seen["history"]
    states = [state for _, state in entries]
    assert states == [word(DETECT), word(L0, up=1), word(L0, up=1, rate=1, mps=1)]
    assert count == 3 and RECOVERY not in [s & 0x3F for s in states]
    times = [time for time, _ in entries]
    # Each taken once it held for two cycles, a cycle after it changed: the reset word at cycle
    # 1, L0 at 13 (set at 12, after 10 cycles and the mixed one), the next 10 cycles later.
    assert times == [1, 13, 23]
    assert seen["state"] == states[-1] and seen["now"] > times[-1]


def test_the_last_depth_changes_are_kept_and_all_are_counted():
    dut = LinkHistory()
    seen = {}
    changes = soc.LINK_HISTORY_DEPTH + 5

    def bench():
        for n in range(changes):
            yield dut.ltssm.eq(n % 2 and L0 or RECOVERY)
            yield dut.width.eq(n % 4)
            yield
            yield
            yield
        seen["history"] = yield from read_history(dut)

    run_simulation(dut, bench())
    count, entries = seen["history"]
    assert count == changes + 1 and len(entries) == soc.LINK_HISTORY_DEPTH  # + the reset word
    widths = [soc.link_field(state, "width") for _, state in entries]
    assert widths == [n % 4 for n in range(changes - soc.LINK_HISTORY_DEPTH, changes)]
