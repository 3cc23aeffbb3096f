"""The PCIe SoC's firmware builds from its sources and the generated contract header, fits the
ROM, and is the image both the board's ROM and the simulation load."""

from busprobe.bitstream.firmware import build_firmware, firmware_source_dir
from busprobe.protocol import c_header, pcie_soc


def test_firmware_builds_from_the_generated_header_and_fits_the_rom():
    firmware = build_firmware()
    assert 1024 < 4 * len(firmware.words) <= pcie_soc.ROM_SIZE
    # The $readmemh file the simulation loads holds the same words as the board's ROM init.
    memh = [int(line, 16) for line in firmware.memh.read_text().split()]
    assert tuple(memh) == firmware.words
    assert firmware.binary.read_bytes()[:4] == firmware.words[0].to_bytes(4, "little")
    # The header was generated, never written by hand: the sources hold none.
    assert not list(firmware_source_dir().glob("busprobe_protocol.h"))
    header = (firmware.memh.parent / "busprobe_protocol.h").read_text()
    assert header == c_header.render()


def test_an_unchanged_firmware_is_not_rebuilt():
    first = build_firmware()
    stamp = first.memh.stat().st_mtime_ns
    assert build_firmware() == first and first.memh.stat().st_mtime_ns == stamp
