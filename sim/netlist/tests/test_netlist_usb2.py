"""The USB 2.0 board design at gate level: the netlist its bitstream is packed from, simulated.

``sim:usb2?level=netlist`` takes the post-synthesis netlist of the Cynthion r1.4 ``usb2`` build
(yosys alone when no board build is cached: ~10 s, not the minutes of place and route) and runs
it in the RTL's test bench. The first test goes through the real transport, as ``busprobe
sweep`` does; the second shows the simulation sees what the netlist says: with one LUT's truth
table inverted, the same check that passes on the intact netlist fails.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sim.cocotb_suite import run_cocotb_suite
from busprobe.targets import open_transport

HERE = Path(__file__).resolve().parent
LENGTH = 64 << 10
#: The PRBS generator's state: inverting the LUT that feeds one of its flip-flops changes every
#: IN byte from there on (a LUT elsewhere could sit on a path the test never exercises).
FLIPPED_LUT_PREFIX = "device.data_path.source.generator.prbs_history"


@pytest.mark.sim
def test_usb2_netlist_enumerates_and_streams_64k_in_and_out_without_errors():
    started = time.monotonic()
    with open_transport("sim:usb2?level=netlist") as transport:  # powers up and enumerates
        assert transport.bus.extra["level"] == "netlist"
        opened = time.monotonic()
        transport.set_pattern(Pattern.PRBS31)
        expected = PatternStream(Pattern.PRBS31)
        errors = []
        result = transport.stream("in", LENGTH, 1, 2,
                                  sink=lambda data: errors.append(expected.check(data).errors))
        assert result.bytes == LENGTH and sum(errors) == 0
        transport.clear_telemetry()
        transport.set_pattern(Pattern.PRBS31)
        source = PatternStream(Pattern.PRBS31)
        before = transport.platform.counters()
        result = transport.stream("out", LENGTH, 1, 2, source=source.take)
        after = transport.platform.counters()
        telemetry = transport.read_telemetry()
        assert result.bytes == LENGTH == telemetry.device_bytes["out"]
        assert telemetry.errors["out"] == 0
        cycles = after["cycle"] - before["cycle"]
        wall = after["busy_wall_s"] - before["busy_wall_s"]
    print(f"netlist model ready and enumerated in {opened - started:.1f} s; 64 KiB OUT: "
          f"{cycles} cycles in {wall:.2f} s ({cycles / wall / 1e3:.0f} k cycles/s)")


def _flipped_model(tmp_path: Path) -> tuple[Path, str]:
    """A model of the ``usb2`` netlist with one LUT's INIT inverted; ``(model, LUT name)``."""
    from busprobe.bitstream.designs import get_design
    from busprobe.bitstream.ecp5 import ecp5_netlist
    from busprobe.build_cache import build_root
    from busprobe.gateware.boards import get_board
    from busprobe.sim.netlist.build import build_netlist_model
    from busprobe.sim.netlist.usb2 import BOARD, usb2_netlist_verilog
    from busprobe.sim.netlist.yosys_json import Netlist
    from busprobe.sim.usb2.simulator_build import PHY_SOURCE, usb2_sim_top

    board = get_board(BOARD)
    netlist = Netlist.load(ecp5_netlist(board, get_design("usb2"), root=build_root()).path)
    luts = [c for c in netlist.of_type("LUT4") if c.name.startswith(FLIPPED_LUT_PREFIX)]
    assert luts, f"no LUT4 named {FLIPPED_LUT_PREFIX}* in the netlist: pick another"
    lut = luts[0]
    init = lut.parameters["INIT"]
    lut.parameters["INIT"] = init.translate(str.maketrans("01", "10"))
    module = "busprobe_usb2_flipped_netlist"
    path = tmp_path / f"{module}.v"
    path.write_text(usb2_netlist_verilog(netlist, phy=board.phy, module=module,
                                         header=f"{lut.name}: INIT {init} inverted"))
    model = build_netlist_model("usb2-netlist-flipped", path, usb2_sim_top(module), [PHY_SOURCE])
    return model, lut.name


def _run(model: Path, out: Path) -> str | None:
    """The check's failure text on ``model``, or None if it passed."""
    name = "enumerates_then_prbs31_in_and_out_match_the_pattern"
    outcome = run_cocotb_suite(model, out, module="netlist_cocotb", module_dir=HERE,
                               toplevel="usb2_sim_top", testcases=[name])
    assert name in outcome, "the check did not run (simulator crashed?)"
    return outcome[name]


@pytest.mark.sim
def test_usb2_netlist_with_one_lut_inverted_fails_the_check_the_intact_one_passes(tmp_path):
    from busprobe.sim.netlist.usb2 import build_usb2_netlist_simulator

    intact = build_usb2_netlist_simulator("busprobe")
    (tmp_path / "intact").mkdir()
    assert _run(intact, tmp_path / "intact") is None
    flipped, lut = _flipped_model(tmp_path)
    (tmp_path / "flipped").mkdir()
    failure = _run(flipped, tmp_path / "flipped")
    assert failure is not None, f"inverting {lut} changed nothing the check sees"
    assert "differs from the pattern" in failure, failure
