"""``busprobe flash``: the exact programmer command per board, and one-line errors."""

import os
import subprocess
from pathlib import Path

import pytest
from busprobe.bitstream.flash import bitstream_part
from busprobe.cli import main
from busprobe.toolchain import ecp5_toolchain_env


@pytest.fixture(scope="module")
def ecp5_12f_bitstream(tmp_path_factory) -> Path:
    """A real (empty) LFE5U-12F bitstream from ecppack: no comment header, IDCODE only."""
    out = tmp_path_factory.mktemp("ecp5")
    config = out / "empty.config"
    config.write_text(".device LFE5U-12F\n")
    # YoWASP tools see the working directory: relative names.
    subprocess.run([ecp5_toolchain_env()["ECPPACK"], "--input", config.name, "--bit", "empty.bit"],
                   check=True, capture_output=True, cwd=out)
    return out / "empty.bit"


@pytest.fixture(scope="module")
def ecp5_85f_bitstream(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ecp5_85")
    (out / "empty.config").write_text(".device LFE5UM5G-85F\n")
    subprocess.run([ecp5_toolchain_env()["ECPPACK"], "--input", "empty.config", "--bit",
                    "empty.bit"], check=True, capture_output=True, cwd=out)
    return out / "empty.bit"


def xilinx_bit(path: Path, part: str) -> Path:
    """A file with the header layout Vivado writes: field 0, then fields a (design), b (part)."""
    def field(key: bytes, text: str) -> bytes:
        value = text.encode() + b"\0"
        return key + len(value).to_bytes(2, "big") + value

    header = (b"\x00\x09\x0f\xf0\x0f\xf0\x0f\xf0\x0f\xf0\x00\x00\x01"
              + field(b"a", "busprobe_pcie;UserID=0XFFFFFFFF") + field(b"b", part)
              + field(b"c", "2024/01/01") + field(b"d", "00:00:00") + b"e\x00\x00\x00\x10")
    path.write_bytes(header + b"\xff" * 16)
    return path


def run_cli(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_bitstream_part_reads_ecp5_idcode_when_there_is_no_part_comment(ecp5_12f_bitstream):
    assert bitstream_part(ecp5_12f_bitstream) == "LFE5U-12F"


def test_bitstream_part_reads_the_xilinx_header_part_field(tmp_path):
    assert bitstream_part(xilinx_bit(tmp_path / "x.bit", "7a200tfbg676")) == "7a200tfbg676"


@pytest.mark.parametrize(("to_flash", "verb"), [(False, "configure"), (True, "flash-program")])
def test_dry_run_prints_the_apollo_command_for_cynthion(capsys, ecp5_12f_bitstream, to_flash,
                                                        verb):
    argv = ["flash", "--board", "cynthion-r1.4", str(ecp5_12f_bitstream), "--dry-run"]
    status, out, _ = run_cli(capsys, *argv, *(["--to-flash"] if to_flash else []))
    assert status == 0
    assert out.strip() == f"apollo {verb} {ecp5_12f_bitstream}"


@pytest.mark.parametrize(("to_flash", "flag"), [(False, ""), (True, " -f")])
def test_dry_run_prints_the_openfpgaloader_command_for_ac701(capsys, tmp_path, to_flash, flag):
    bit = xilinx_bit(tmp_path / "pcie.bit", "7a200tfbg676")
    argv = ["flash", "--board", "xilinx-ac701", str(bit), "--dry-run"]
    status, out, _ = run_cli(capsys, *argv, *(["--to-flash"] if to_flash else []))
    assert status == 0
    assert out.strip() == f"openFPGALoader -b ac701{flag} {bit}"


def test_dry_run_prints_the_openfpgaloader_command_for_ecpix5(capsys, ecp5_85f_bitstream):
    status, out, _ = run_cli(capsys, "flash", "--board", "ecpix5-85", str(ecp5_85f_bitstream),
                             "--dry-run", "--to-flash")
    assert status == 0
    assert out.strip() == f"openFPGALoader -b ecpix5 -f {ecp5_85f_bitstream}"


@pytest.mark.parametrize(("to_flash", "flag"), [(False, ""), (True, " -f")])
def test_dry_run_prints_the_openfpgaloader_cable_command_for_the_versa(capsys, tmp_path,
                                                                      to_flash, flag):
    """openFPGALoader has no board name for the ECP5-5G Versa: its FT2232H is the generic
    ``ft2232`` cable (JTAG on interface A)."""
    (tmp_path / "empty.config").write_text(".device LFE5UM5G-45F\n")
    subprocess.run([ecp5_toolchain_env()["ECPPACK"], "--input", "empty.config", "--bit",
                    "empty.bit"], check=True, capture_output=True, cwd=tmp_path)
    bit = tmp_path / "empty.bit"
    argv = ["flash", "--board", "versa-ecp5-5g", str(bit), "--dry-run"]
    status, out, _ = run_cli(capsys, *argv, *(["--to-flash"] if to_flash else []))
    assert status == 0
    assert out.strip() == f"openFPGALoader -c ft2232{flag} {bit}"
    status, _, err = run_cli(capsys, "flash", "--board", "ecpix5-85", str(bit), "--dry-run")
    assert_one_line_error(status, err, "built for LFE5UM5G-45F", "LFE5UM5G-85F")


def test_ecp5_bitstream_for_a_smaller_device_is_refused_on_ecpix5(capsys, ecp5_12f_bitstream):
    status, _, err = run_cli(capsys, "flash", "--board", "ecpix5-85", str(ecp5_12f_bitstream),
                             "--dry-run")
    assert_one_line_error(status, err, "built for LFE5U-12F", "LFE5UM5G-85F")


def assert_one_line_error(status, err, *fragments):
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("busprobe: error: "), err
    for fragment in fragments:
        assert fragment in lines[0]


def test_missing_bitstream_is_a_one_line_error(capsys, tmp_path):
    status, _, err = run_cli(capsys, "flash", "--board", "cynthion-r1.4",
                             str(tmp_path / "nope.bit"), "--dry-run")
    assert_one_line_error(status, err, "does not exist")


def test_a_directory_given_as_bitstream_names_the_bit_files_in_it(capsys, tmp_path):
    (tmp_path / "top.bit").write_bytes(b"")
    status, _, err = run_cli(capsys, "flash", "--board", "cynthion-r1.4", str(tmp_path),
                             "--dry-run")
    assert_one_line_error(status, err, "is a directory (it holds top.bit); name the .bit file")


def test_bitstream_for_another_fpga_is_refused(capsys, ecp5_12f_bitstream, tmp_path):
    status, _, err = run_cli(capsys, "flash", "--board", "xilinx-ac701",
                             str(ecp5_12f_bitstream), "--dry-run")
    assert_one_line_error(status, err, "built for LFE5U-12F", "7a200tfbg676")
    xilinx = xilinx_bit(tmp_path / "x.bit", "7a35tcsg324")
    status, _, err = run_cli(capsys, "flash", "--board", "xilinx-ac701", str(xilinx), "--dry-run")
    assert_one_line_error(status, err, "built for 7a35tcsg324")


def test_file_that_is_not_a_bitstream_is_refused(capsys, tmp_path):
    junk = tmp_path / "junk.bit"
    junk.write_bytes(b"hello")
    status, _, err = run_cli(capsys, "flash", "--board", "cynthion-r1.4", str(junk), "--dry-run")
    assert_one_line_error(status, err, "no FPGA part")
    text = tmp_path / "top.svf"
    text.write_text("HDR 0;")
    status, _, err = run_cli(capsys, "flash", "--board", "cynthion-r1.4", str(text), "--dry-run")
    assert_one_line_error(status, err, "not a .bit bitstream")


def test_unknown_board_lists_the_known_ones(capsys, ecp5_12f_bitstream):
    status, _, err = run_cli(capsys, "flash", "--board", "icebreaker", str(ecp5_12f_bitstream))
    assert_one_line_error(status, err, "unknown board", "cynthion-r1.4", "xilinx-ac701")


def test_missing_openfpgaloader_is_a_one_line_error(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing installed here
    bit = xilinx_bit(tmp_path / "pcie.bit", "7a200tfbg676")
    status, _, err = run_cli(capsys, "flash", "--board", "xilinx-ac701", str(bit))
    assert_one_line_error(status, err, "openFPGALoader not found")


def test_apollo_without_a_cynthion_attached_is_a_one_line_error(capsys, ecp5_12f_bitstream):
    # apollo-fpga is installed (busprobe[flash]) and really runs; no Cynthion is attached here.
    status, _, err = run_cli(capsys, "flash", "--board", "cynthion-r1.4", str(ecp5_12f_bitstream))
    assert_one_line_error(status, err, "apollo")
    assert "Traceback" not in err and os.fspath(ecp5_12f_bitstream) not in err
