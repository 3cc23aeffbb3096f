"""Artix-7 PCIe target: LiteX generation, and Verilator lint with generated black-box stubs."""

import shutil

import pytest
from busprobe.bitstream.designs import get_design
from busprobe.bitstream.pcie import BUILD_NAME, generate_pcie_target
from busprobe.bitstream.xilinx_stubs import undefined_modules, verilator_lint, write_blackbox_stubs
from busprobe.cli import main
from busprobe.gateware.boards import get_board
from busprobe.protocol import pcie as proto


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    out = tmp_path_factory.mktemp("ac701")
    soc, target = generate_pcie_target(get_board("xilinx-ac701"), get_design("pcie"),
                                       out_dir=out)
    stubs = out / "xilinx_stubs.v"
    stubbed = write_blackbox_stubs(soc, target.verilog_path, stubs)
    return target, stubs, stubbed


def test_target_has_pins_from_the_board_file_and_the_pcie_ip_in_its_tcl(target):
    target, _, _ = target
    xdc = target.xdc_path.read_text()
    # AC701 pcie_x1 lane 0 (litex-boards xilinx_ac701.py): refclk F11/E11, RX D12, TX D10.
    for pin in ("F11", "E11", "D12", "D10", "M20"):
        assert f"LOC {pin} " in xdc
    assert "create_clock" in xdc
    tcl = target.tcl_path.read_text()
    assert "create_ip -vendor xilinx.com -name pcie_7x -module_name pcie_s7" in tcl
    assert "CONFIG.Maximum_Link_Width {X1}" in tcl
    assert "CONFIG.Link_Speed {5.0_GT/s}" in tcl
    assert f"CONFIG.Device_ID {{{proto.DEVICE_ID:04X}}}" in tcl
    assert f"CONFIG.Bar0_Size {{{proto.BAR0_SIZE // 1024}}}" in tcl
    assert "xc7a200t-fbg676" in tcl


def test_hard_ip_and_primitives_are_stubbed_from_generated_descriptions(target):
    target, stubs, stubbed = target
    assert {"pcie_s7", "MMCME2_ADV", "IBUFDS_GTE2", "BUFG"} <= set(stubbed)
    assert set(stubbed) == set(undefined_modules(target.verilog_path.read_text()))
    text = stubs.read_text()
    assert text.count("(* blackbox *)") == len(stubbed)


def test_generated_verilog_lints_clean_with_verilator(target):
    target, stubs, _ = target
    report = verilator_lint([stubs, target.verilog_path], BUILD_NAME)
    assert report.clean, "\n".join(report.findings[:20])


def test_lint_catches_a_port_the_hard_ip_does_not_have(target, tmp_path):
    target, stubs, _ = target
    # Negative control: the same stubs with one pcie_s7 port removed must not lint clean.
    text = stubs.read_text()
    start = text.index("module pcie_s7 (")
    port_line = text.index("\n", text.index("\n", start) + 1)
    broken = text[:text.index("\n", start) + 1] + text[port_line + 1:]
    broken_stubs = tmp_path / "broken_stubs.v"
    broken_stubs.write_text(broken)
    report = verilator_lint([broken_stubs, target.verilog_path], BUILD_NAME)
    assert not report.clean
    assert any("PINNOTFOUND" in f or "Pin not found" in f for f in report.findings)


@pytest.mark.skipif(shutil.which("vivado") is not None, reason="vivado is installed here")
def test_build_without_vivado_stops_after_generation_saying_what_to_run(capsys, tmp_path):
    assert main(["build", "--board", "xilinx-ac701", "--design", "pcie",
                 "--out", str(tmp_path), "--lint"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert any(line.strip().startswith("verilator lint: clean") for line in out), out
    gateware = tmp_path.resolve() / "gateware"
    assert out[-1] == (f"vivado not on PATH: to build the bitstream run: cd {gateware} && "
                       f"sh build_{BUILD_NAME}.sh")
    assert "vivado -mode batch" in (gateware / f"build_{BUILD_NAME}.sh").read_text()
