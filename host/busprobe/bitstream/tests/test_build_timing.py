"""``busprobe build`` judged from nextpnr's report: every clock listed with its constraint and Fmax,
no bitstream unless every clock is met, no clock left to nextpnr's default.

The reports are real ones (``fixtures/``: nextpnr's ``--report`` JSON and yosys' cell statistics
of two ECPIX-5 usb3 builds, LUNA's 250 MHz gearbox that missed and this project's crossing that
met); the tool run is replaced by copying them, so the flow from ``build_ecp5`` down (cache,
parsing, clock checks, writing or withholding the bitstream) and the command line run for real.
"""

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from busprobe.bitstream.clocks import check_clocks
from busprobe.bitstream.designs import get_design
from busprobe.bitstream.nextpnr_report import parse_nextpnr_report
from busprobe.bitstream.result import BuildError, BuildResult, TimingNotMet
from busprobe.cli import main
from busprobe.gateware.boards import get_board
from busprobe.gateware.usb3.board_top import CLOCKS_MHZ

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MET, MISSED = "usb3-crossing", "usb3-luna-gearbox"


class _FixturePlan:
    """Stands in for Amaranth's build plan: its "tool run" writes a real build's outputs."""

    def __init__(self, name: str) -> None:
        self.name = name

    def digest(self) -> bytes:
        return hashlib.sha256(self.name.encode()).digest()

    def execute_local(self, root: str, env: dict | None = None) -> None:
        out = Path(root)
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURES / f"{self.name}.report.json", out / "top.report.json")
        shutil.copyfile(FIXTURES / f"{self.name}.yosys.rpt", out / "top.rpt")
        (out / "top.bit").write_bytes(b"a bitstream")


@pytest.fixture
def fixture_builds(monkeypatch, tmp_path):
    """``build_ecp5`` on fixtures: ``use(name)`` picks the build the next command gets."""
    import busprobe.bitstream.ecp5 as ecp5

    monkeypatch.setenv("BUSPROBE_BUILD_DIR", str(tmp_path / "cache"))
    chosen = {}
    monkeypatch.setattr(ecp5, "prepare_ecp5",
                        lambda board, design, seed=None: (object(), _FixturePlan(chosen["name"])))

    def use(name: str) -> None:
        chosen["name"] = name
    return use


def _result(name: str) -> BuildResult:
    report = parse_nextpnr_report(FIXTURES / f"{name}.report.json", domains_mhz=CLOCKS_MHZ,
                                  yosys_log=FIXTURES / f"{name}.yosys.rpt")
    return BuildResult(board="ecpix5-85", design="usb3", design_class="x:Y", fpga="LFE5UM5G-85F",
                       bitstream="top.bit", clocks=report.clocks,
                       utilisation=report.utilisation, build_seconds=1.0, toolchain={},
                       key="0")


def test_report_reads_the_link_clock_and_the_serdes_clock_with_constraint_and_fmax():
    for name in (MET, MISSED):
        clocks = {c.domain: c for c in _result(name).clocks}
        assert set(clocks) == {"ss", "pclk"}, clocks
        assert clocks["ss"].constraint_mhz == 125.0 and clocks["pclk"].constraint_mhz == 250.0
    missed = {c.domain: c for c in _result(MISSED).clocks}
    assert missed["pclk"].achieved_mhz == 199.8 and not missed["pclk"].met
    check_clocks(_result(MET), declared=CLOCKS_MHZ, required=CLOCKS_MHZ)
    assert _result(MET).timing_met and not _result(MISSED).timing_met


def test_met_build_writes_the_bitstream_and_a_report_of_every_clock(fixture_builds, tmp_path,
                                                                    capsys):
    fixture_builds(MET)
    out, report = tmp_path / "out", tmp_path / "report.json"
    assert main(["build", "--board", "ecpix5-85", "--design", "usb3", "--out", str(out),
                 "--json", str(report)]) == 0
    data = json.loads(report.read_text())
    assert data["timing_met"] is True
    assert Path(data["bitstream"]) == out / "ecpix5-85-usb3.bit"
    assert (out / "ecpix5-85-usb3.bit").read_bytes() == b"a bitstream"
    clocks = {c["domain"]: c for c in data["clocks"]}
    assert set(clocks) == {"ss", "pclk"}
    for domain, mhz in CLOCKS_MHZ.items():
        assert clocks[domain]["constraint_mhz"] == mhz
        assert clocks[domain]["achieved_mhz"] >= mhz and clocks[domain]["met"] is True
    assert data["utilisation"]["LUT4"]["used"] > 0 and data["utilisation"]["DP16KD"]["used"] > 0
    shown = capsys.readouterr().out
    assert "Fmax pclk" in shown and "Fmax ss" in shown


def test_missed_build_writes_no_bitstream_says_which_clock_in_one_line_and_keeps_figures(
        fixture_builds, tmp_path, capsys):
    fixture_builds(MISSED)
    out, report = tmp_path / "out", tmp_path / "report.json"
    argv = ["build", "--board", "ecpix5-85", "--design", "usb3", "--out", str(out), "--json",
            str(report)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "timing not met: pclk reaches 199.80 MHz, needs 250.00 MHz; no bitstream" in err
    assert not out.exists()
    assert not list((tmp_path / "cache").rglob("*.bit"))
    data = json.loads(report.read_text())
    assert data["timing_met"] is False and data["bitstream"] is None
    assert {c["domain"]: c["met"] for c in data["clocks"]} == {"ss": True, "pclk": False}
    # Asked again: the same answer from the kept figures, nothing rebuilt.
    import busprobe.bitstream.ecp5 as ecp5

    with pytest.raises(TimingNotMet) as again:
        ecp5.build_ecp5(get_board("ecpix5-85"), get_design("usb3"),
                        root=tmp_path / "cache")
    assert again.value.result.cached and again.value.result.clock("pclk").achieved_mhz == 199.8


@pytest.mark.parametrize("change, message", [
    (lambda fmax: fmax["$glbnet$phy.pclk_clk"].update(constraint=12.0),
     "the pclk domain was timed at 12.00 MHz, not its 250.00 MHz"),
    (lambda fmax: fmax.pop("$glbnet$phy.pclk_clk"), "no timing for the pclk domain"),
    (lambda fmax: fmax.update({"$glbnet$clk100_0__io": {"achieved": 300.0, "constraint": 100}}),
     "nextpnr times clock net $glbnet$clk100_0__io at 100.00 MHz, and no clock of the design"),
])
def test_a_clock_not_timed_at_its_own_frequency_is_refused(tmp_path, change, message):
    report = json.loads((FIXTURES / f"{MET}.report.json").read_text())
    change(report["fmax"])
    path = tmp_path / "top.report.json"
    path.write_text(json.dumps(report))
    result = _result(MET)
    result.clocks = parse_nextpnr_report(path, domains_mhz=CLOCKS_MHZ).clocks
    with pytest.raises(BuildError, match=message.replace("$", r"\$").replace(".", r"\.")):
        check_clocks(result, declared=CLOCKS_MHZ, required=CLOCKS_MHZ)


@pytest.mark.parametrize("board, design, expected", [
    ("cynthion-r1.4", "usb3", "board cynthion-r1.4 cannot carry design 'usb3' (it carries: "
                              "usb2, usb2-full, usb2-storage, usb2-stock)"),
    ("xilinx-ac701", "usb3", "board xilinx-ac701 cannot carry design 'usb3' (it carries: pcie)"),
    ("ecpix5-85", "usb4", "unknown design 'usb4'"),
])
def test_a_board_or_design_that_cannot_carry_usb3_is_one_line(capsys, board, design, expected):
    assert main(["build", "--board", board, "--design", design]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("busprobe: error: ") and expected in err and "\n" not in err


def test_a_seed_that_is_not_a_whole_number_from_1_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["build", "--board", "ecpix5-85", "--design", "usb3", "--seed", "0"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "'0' is not a seed" in err and "\n" not in err


#: A real report: the Versa's soft PCIe endpoint, default seed, the link at 250 MHz missed.
VERSA = "versa-pcie-endpoint"


def test_each_clocks_worst_path_names_its_blocks_and_splits_logic_from_wire():
    from busprobe.bitstream.nextpnr_report import critical_paths

    nets = {"$glbnet$clk250": "link", "$glbnet$serdes_clk": "pclk",
            "$glbnet$ctl_reset.async_ff_clk": "ctl"}
    paths = {p.domain: p for p in critical_paths(FIXTURES / f"{VERSA}.report.json",
                                                 net_domains=nets)}
    assert set(paths) == {"link", "pclk", "ctl"}  # the cross-clock path in the report is not one
    link = paths["link"]
    assert (link.total_ns, link.logic_ns, link.routing_ns, link.levels) == (9.51, 2.61, 6.9, 19)
    assert link.blocks == ("design.link", "design.link.replay", "design.link.replay.data",
                           "design.link.link.skp_inserter", "phy.crossing.tx_fifo.storage")
    assert paths["ctl"].blocks == ("phy.serdes.reset_sequencer",)  # U$2, a nameless part of it


#: Real reports of the Versa's two designs on the link at four symbols a clock, a word a
#: 62.5 MHz clock at Gen1 (its clock from a PLL halving the DCU's), default seed, every clock
#: met (2026-12-03): the endpoint alone, and the SoC with LitePCIe's DMA engine around it.
VERSA_BUILDS = [
    ("versa-pcie-word-link", "pcie-endpoint", "113.33", "6.59 ns (1.81 logic, 4.78 routing, 9 "
     "logic levels): phy.gearbox.tx_fifo > ", 5492),
    ("versa-pcie-soc", "pcie", "63.42", "5.63 ns (2.11 logic, 3.51 routing, 12 logic "
     "levels): phy.detector", 16917),
]


@pytest.mark.parametrize("fixture, design, link_mhz, pclk_path, luts", VERSA_BUILDS,
                         ids=[build[1] for build in VERSA_BUILDS])
def test_a_versa_build_times_the_link_the_dcu_side_and_the_control_clock_each_at_its_own(
        fixture_builds, tmp_path, capsys, fixture, design, link_mhz, pclk_path, luts):
    fixture_builds(fixture)
    out, report = tmp_path / "out", tmp_path / "report.json"
    argv = ["build", "--board", "versa-ecp5-5g", "--design", design, "--out", str(out),
            "--json", str(report)]
    assert main(argv) == 0
    shown = capsys.readouterr().out
    assert re.search(rf"Fmax link +{link_mhz} MHz \(constraint 62\.50 MHz, met\)", shown)
    assert f"critical path pclk: {pclk_path}" in shown
    data = json.loads(report.read_text())
    assert {c["domain"]: (c["constraint_mhz"], c["met"]) for c in data["clocks"]} == {
        "link": (62.5, True), "pclk": (125.0, True), "ctl": (100.0, True)}
    assert data["utilisation"]["LUT4"]["used"] == luts
    assert (out / f"versa-ecp5-5g-{design}.bit").read_bytes() == b"a bitstream"
