"""Result files of every kind (``busprobe.result_file``): a regular file is replaced whole, a link
is written through, a FIFO, a character device or ``/proc/self/fd/N`` is written in place, and
every write error is one line naming the path, exit status 2, the previous file as it was.

The sweep runs on the in-process loopback device (conftest.py). Device nodes are private ones
made with ``mknod`` in the test's folder when the test runs as root (a ``/dev/full`` of our own:
a bug that renamed over it harms nothing); the full file system is a 64 KiB tmpfs mounted for
the test, also as root. Without root the same checks fall back to the system's ``/dev/full`` and
``/dev/null``, and the tmpfs case is skipped.
"""

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from busprobe.cli import main
from busprobe.result_file import ResultWriteError, check_writable, is_stdout, write_result

QUICK = ["--lengths", "512,2K", "--queue-depth", "1", "--no-progress"]
ROOT = os.geteuid() == 0


def _sweep(capsys, *argv):
    status = main(["sweep", "--device", "sim:loop", *QUICK, *argv])
    out, err = capsys.readouterr()
    return status, out, err


def _char_device(folder: Path, name: str, minor: int) -> Path:
    """A private node of the memory device ``1:minor`` (3 = null, 7 = full), or the system's."""
    if not ROOT:
        return Path(f"/dev/{name}")
    node = folder / name
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    return node


def _one_error_line(err: str, *parts: str) -> None:
    """The run's last line on stderr is its one error line, holding ``parts``."""
    errors = [line for line in err.splitlines() if line.startswith("busprobe: error: ")]
    assert len(errors) == 1 and err.endswith(errors[0] + "\n"), err
    for part in parts:
        assert part in errors[0], err


def test_a_regular_file_is_replaced_whole_and_keeps_its_permissions(loopback_device, capsys,
                                                                     tmp_path):
    result = tmp_path / "r.json"
    result.write_text("old")
    result.chmod(0o640)
    inode = result.stat().st_ino
    status, out, _ = _sweep(capsys, "--json", str(result))
    assert status == 0 and f"JSON: {result}" in out
    assert json.loads(result.read_text())["complete"] is True
    assert result.stat().st_ino != inode  # a new file renamed over the old one
    assert stat.S_IMODE(result.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary left behind


def test_a_symlink_is_written_through_and_stays_a_link(loopback_device, capsys, tmp_path):
    target = tmp_path / "results" / "run.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    dangling = tmp_path / "next.csv"
    dangling.symlink_to(tmp_path / "results" / "next.csv")
    status, _, err = _sweep(capsys, "--json", str(link), "--csv", str(dangling))
    assert status == 0, err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["points"]
    assert dangling.is_symlink() and (tmp_path / "results" / "next.csv").read_text().startswith(
        "direction,")


def test_a_fifo_is_written_in_place_for_its_reader(loopback_device, capsys, tmp_path):
    fifo = tmp_path / "results.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    status, _, err = _sweep(capsys, "--json", str(fifo))
    reader.join(10)
    assert status == 0, err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert json.loads(got[0])["complete"] is True


def test_a_character_device_is_written_in_place_and_stays_a_device(loopback_device, capsys,
                                                                   tmp_path):
    null = _char_device(tmp_path, "null", 3)
    status, _, err = _sweep(capsys, "--json", str(null), "--csv", str(null))
    assert status == 0, err
    assert stat.S_ISCHR(null.lstat().st_mode)


def test_a_full_device_is_one_line_exit_2_and_the_device_node_stays(loopback_device, capsys,
                                                                    tmp_path):
    full = _char_device(tmp_path, "full", 7)
    status, out, err = _sweep(capsys, "--json", str(full))
    assert status == 2
    _one_error_line(err, f"cannot write {full}", "no space left", "ENOSPC")
    assert "[Errno" not in err
    assert stat.S_ISCHR(full.lstat().st_mode)
    assert "host MB/s" in out  # the measurement itself still reached the user


def test_proc_self_fd_is_written_through_the_open_descriptor(loopback_device, capsys,
                                                             tmp_path):
    opened = tmp_path / "opened.json"
    fd = os.open(opened, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        inode = opened.stat().st_ino
        status, _, err = _sweep(capsys, "--json", f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)
    assert status == 0, err
    assert opened.stat().st_ino == inode  # written into the file the descriptor holds
    assert json.loads(opened.read_text())["complete"] is True


def test_dev_stdout_counts_as_stdout_and_moves_the_table_to_stderr(loopback_device, capfd):
    status = main(["sweep", "--device", "sim:loop", *QUICK, "--json", "/dev/stdout"])
    out, err = capfd.readouterr()
    assert status == 0
    assert json.loads(out)["complete"] is True and "host MB/s" in err
    assert is_stdout("-") and is_stdout("/proc/self/fd/1") and not is_stdout("/proc/self/fd/2")
    assert not is_stdout(f"/proc/{os.getpid() + 1}/fd/1")


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A 64 KiB tmpfs of our own (root only), unmounted afterwards."""
    if not ROOT:
        pytest.skip("mounting a tmpfs needs root; /dev/full covers ENOSPC without it")
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_full_file_system_keeps_the_previous_result_and_says_so(loopback_device, capsys,
                                                                  tiny_tmpfs):
    previous = tiny_tmpfs / "r.json"
    previous.write_text('{"a good": "result"}')
    with open(tiny_tmpfs / "filler", "wb", buffering=0) as filler:  # fill it to the last byte
        try:
            while True:
                filler.write(b"\0" * 4096)
        except OSError:
            pass
    status, _, err = _sweep(capsys, "--json", str(previous))
    assert status == 2
    _one_error_line(err, f"cannot write {previous}", "no space left", "ENOSPC")
    assert previous.read_text() == '{"a good": "result"}'
    assert sorted(p.name for p in tiny_tmpfs.iterdir()) == ["filler", "r.json"]


@pytest.mark.parametrize("command", [
    ["model", "--device", "sim:pcie", "--json", "-"],
    ["report", str(Path(__file__).parents[3] / "tests/fixtures/results/usb2_ideal.json"),
     "-o", "-"],
])
def test_a_reader_that_goes_away_is_one_line_broken_pipe(command):
    """stdout is a pipe whose reading end is closed before busprobe writes (EPIPE)."""
    read, write = os.pipe()
    os.close(read)
    proc = subprocess.run([sys.executable, "-m", "busprobe", *command], stdout=write,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    os.close(write)
    assert proc.returncode == 2
    _one_error_line(proc.stderr, "cannot write stdout", "broken pipe", "EPIPE")


def test_a_block_device_or_a_folder_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ResultWriteError, match="it is a directory; name a file"):
        write_result(tmp_path, "x")
    if ROOT:
        disk = tmp_path / "disk"
        os.mknod(disk, stat.S_IFBLK | 0o600, os.makedev(7, 200))  # a loop device's number
        for call in (lambda: check_writable(disk), lambda: write_result(disk, "x")):
            with pytest.raises(ResultWriteError, match="block device"):
                call()
        assert stat.S_ISBLK(disk.lstat().st_mode)


def test_an_unopened_descriptor_is_refused_before_the_measurement(tmp_path):
    fd = os.open(tmp_path / "x", os.O_WRONLY | os.O_CREAT)
    os.close(fd)  # now certainly not open
    with pytest.raises(ResultWriteError, match=f"descriptor {fd} is not open"):
        check_writable(f"/proc/self/fd/{fd}")
