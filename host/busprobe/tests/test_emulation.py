"""Results taken inside an emulator say so; a bad --min-bytes is refused in one line."""

import pytest
from busprobe.cli import main
from busprobe.emulation import emulated_host
from busprobe.results import new_document


@pytest.mark.parametrize(("vendor", "expected"), [("QEMU\n", "qemu"), ("LENOVO\n", None)])
def test_the_smbios_vendor_names_the_emulator(tmp_path, vendor, expected):
    (tmp_path / "sys_vendor").write_text(vendor)
    assert emulated_host(tmp_path) == expected


def test_no_dmi_is_not_an_emulator(tmp_path):
    assert emulated_host(tmp_path / "missing") is None


def test_every_result_document_records_whether_its_host_was_emulated():
    assert "emulated" in new_document("sim:usb2")["host"]


@pytest.mark.parametrize("value", ["0", "-4K", "lots"])
def test_min_bytes_must_be_a_positive_size(value, capsys):
    assert main(["sweep", "--device", "sim:usb2", f"--min-bytes={value}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("busprobe: error: bad size") and err.count("\n") == 1
