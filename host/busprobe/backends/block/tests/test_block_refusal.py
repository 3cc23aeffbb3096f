"""The block sweep refuses, in one line and before writing a byte, anything not a null disk."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from busprobe.backends.block.guard import (
    NotANullDisk,
    check_facts,
    check_node,
    check_null_disk,
)
from busprobe.backends.block.sysfs import read_block_facts
from busprobe.cli import main

from .conftest import loop_device, null_disk_image, sysfs_disk


def _one_line(exc: pytest.ExceptionInfo[NotANullDisk]) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_a_regular_file_is_refused(tmp_path):
    path = tmp_path / "disk.img"
    path.write_bytes(b"\0" * 4096)
    with pytest.raises(NotANullDisk) as info:
        check_null_disk(str(path))
    assert "is a regular file, not a block device" in _one_line(info)
    assert path.read_bytes() == b"\0" * 4096


def test_dev_null_is_refused_as_a_character_device():
    with pytest.raises(NotANullDisk) as info:
        check_node("/dev/null")
    assert "/dev/null is a character device" in _one_line(info)


def test_a_fifo_is_refused_without_opening_it(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it would block: the refusal must come from stat alone
    with pytest.raises(NotANullDisk) as info:
        check_null_disk(str(fifo))
    assert "is a FIFO" in _one_line(info)


def test_a_missing_node_is_refused(tmp_path):
    with pytest.raises(NotANullDisk) as info:
        check_null_disk(str(tmp_path / "sdz"))
    assert "No such file" in _one_line(info)


@pytest.mark.parametrize("change, said", [
    ({"partition": True}, "is a partition (sdb1), not a whole disk"),
    ({"ro": True}, "is read-only (sysfs ro = 1)"),
    ({"vendor": b"SanDisk ", "model": b"Ultra           "},
     "is 'SanDisk' 'Ultra', not a busprobe null disk"),
    ({"model": None}, "is not a SCSI disk (no INQUIRY identity"),
    ({"sectors": 1}, "too small"),
])
def test_sysfs_facts_that_are_not_a_null_disk_are_refused(tmp_path, change, said):
    sysfs_disk(tmp_path, 8, 16, **change)
    facts = read_block_facts(8, 16, tmp_path)
    with pytest.raises(NotANullDisk) as info:
        check_facts("/dev/sdb", facts)
    assert said in _one_line(info)


def test_a_null_disks_facts_are_read_from_sysfs(tmp_path):
    sysfs_disk(tmp_path, 8, 16, driver="uas", controller="xhci_hcd")
    facts = read_block_facts(8, 16, tmp_path)
    check_facts("/dev/sdb", facts)
    assert (facts.name, facts.usb_driver, facts.protocol) == ("sdb", "uas", "uas")
    assert (facts.max_sectors_kb, facts.usb_speed, facts.host_profile) == (120, "high", "xhci")
    assert facts.vendor == "BUSPROBE" and facts.model == "NULL DISK       "


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_loop_device_without_an_inquiry_is_refused_by_the_real_sysfs(tmp_path):
    image = tmp_path / "disk.img"
    null_disk_image(image, 2048)
    before = _digest(image)
    with loop_device(image) as node, pytest.raises(NotANullDisk) as info:
        check_null_disk(node)
    assert "is not a SCSI disk" in _one_line(info)
    assert _digest(image) == before


def test_a_disk_that_says_busprobe_but_holds_data_is_refused_by_its_signature(tmp_path):
    image = tmp_path / "disk.img"
    image.write_bytes(os.urandom(1 << 20))
    before = _digest(image)
    with loop_device(image) as node:
        major, minor = check_node(node)
        sysfs_disk(tmp_path / "sys", major, minor, sectors=2048)
        with pytest.raises(NotANullDisk) as info:
            check_null_disk(node, tmp_path / "sys")
    assert "LBA 0 does not hold the null disk's LBA pattern" in _one_line(info)
    assert _digest(image) == before


def test_the_last_block_is_checked_too(tmp_path):
    image = tmp_path / "disk.img"
    null_disk_image(image, 2048)
    with image.open("r+b") as f:
        f.seek(2047 * 512)
        f.write(b"\xff" * 512)
    with loop_device(image) as node:
        major, minor = check_node(node)
        sysfs_disk(tmp_path / "sys", major, minor, sectors=2048)
        with pytest.raises(NotANullDisk, match="LBA 2047 does not hold"):
            check_null_disk(node, tmp_path / "sys")


def test_a_null_disk_passes(tmp_path):
    image = tmp_path / "disk.img"
    null_disk_image(image, 2048)
    with loop_device(image) as node:
        major, minor = check_node(node)
        sysfs_disk(tmp_path / "sys", major, minor, sectors=2048)
        assert check_null_disk(node, tmp_path / "sys").sectors == 2048


@pytest.mark.parametrize("make", ["file", "fifo", "null"])
def test_the_sweep_command_refuses_in_one_line_with_exit_2(tmp_path, capsys, make):
    path = {"null": "/dev/null", "file": str(tmp_path / "f"), "fifo": str(tmp_path / "p")}[make]
    if make == "file":
        Path(path).write_bytes(b"x" * 4096)
    elif make == "fifo":
        os.mkfifo(path)
    status = main(["sweep", "--device", f"block:{path}", "--no-progress"])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "not a block device" in err
    if make == "file":
        assert Path(path).read_bytes() == b"x" * 4096
