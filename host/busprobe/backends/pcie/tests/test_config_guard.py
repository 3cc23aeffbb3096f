"""MPS/MRRS guard on fixture config-space files: refusal, capping, restore on every exit path."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from busprobe.backends.pcie.config import ConfigSpaceGuard, PciFunction
from busprobe.backends.pcie.sysfs_tree import ConfigSpec, SysfsTree
from busprobe.transport import InvalidRequest, PermissionDenied

DEV, PORT = "0000:01:00.0", "0000:00:1c.0"


@pytest.fixture
def tree(tmp_path):
    t = SysfsTree(tmp_path)
    t.add_function(PORT, ConfigSpec(vendor=0x8086, device=0xA110, mps_supported=256, mps=128))
    t.add_function(DEV, ConfigSpec(mps_supported=512, mps=128, mrrs=512), parent=PORT)
    return t


def guard(tree, **kw):
    return ConfigSpaceGuard(DEV, sysfs_root=tree.sys, is_root=lambda: True, **kw)


def caps(tree):
    return (PciFunction(DEV, tree.sys).capability(), PciFunction(PORT, tree.sys).capability())


def test_upstream_port_found_from_sysfs_parent(tree):
    assert PciFunction(DEV, tree.sys).upstream() == PciFunction(PORT, tree.sys)
    assert PciFunction(PORT, tree.sys).upstream() is None


def test_non_root_view_of_config_space_is_a_clear_error(tmp_path):
    t = SysfsTree(tmp_path)
    t.add_function(DEV, ConfigSpec(size=64))
    with pytest.raises(PermissionDenied, match="needs root.*first 64 bytes"):
        PciFunction(DEV, t.sys).capability()


def test_change_refused_without_allow_config_write_and_nothing_written(tree):
    before = tree.config_bytes(DEV), tree.config_bytes(PORT)
    with pytest.raises(InvalidRequest, match="--allow-config-write"):
        with guard(tree, mps=256):
            pass
    assert (tree.config_bytes(DEV), tree.config_bytes(PORT)) == before


def test_change_refused_when_not_root(tree):
    g = ConfigSpaceGuard(DEV, mps=256, allow_write=True, sysfs_root=tree.sys,
                         is_root=lambda: False)
    with pytest.raises(PermissionDenied, match="needs root"):
        with g:
            pass
    assert caps(tree)[0].mps == 128


def test_unchanged_values_need_no_permission(tree):
    with ConfigSpaceGuard(DEV, mps=128, mrrs=512, sysfs_root=tree.sys,
                          is_root=lambda: False) as plan:
        assert (plan.mps, plan.mrrs, plan.capped) == (128, 512, False)


def test_bad_size_refused(tree):
    with pytest.raises(InvalidRequest, match="must be one of"):
        guard(tree, mps=300, allow_write=True).plan()


def test_mps_capped_at_upstream_port_support_and_both_ends_written(tree):
    with guard(tree, mps=512, mrrs=256, allow_write=True) as plan:
        assert plan.mps == 256 and plan.capped and "0000:00:1c.0 supports 256" in plan.notes[0]
        dev, port = caps(tree)
        assert (dev.mps, dev.mrrs, port.mps) == (256, 256, 256)
    dev, port = caps(tree)
    assert (dev.mps, dev.mrrs, port.mps) == (128, 512, 128)


def test_restore_on_exception_keeps_other_devctl_bits(tree):
    before = tree.config_bytes(DEV), tree.config_bytes(PORT)
    with pytest.raises(RuntimeError):
        with guard(tree, mps=256, allow_write=True):
            assert caps(tree)[0].mps == 256
            raise RuntimeError("sweep failed")
    assert (tree.config_bytes(DEV), tree.config_bytes(PORT)) == before


def test_restore_on_sigterm_in_a_separate_process(tree, tmp_path):
    """A real SIGTERM to a process holding the guard: the files are back to the original bytes."""
    before = tree.config_bytes(DEV), tree.config_bytes(PORT)
    ready = tmp_path / "ready"
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from busprobe.backends.pcie.config import ConfigSpaceGuard
        g = ConfigSpaceGuard({DEV!r}, mps=256, mrrs=128, allow_write=True,
                             sysfs_root={str(tree.sys)!r}, is_root=lambda: True)
        try:
            with g:
                Path({str(ready)!r}).write_text("x")
                time.sleep(60)
        except KeyboardInterrupt:
            raise SystemExit(143)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script])
    try:
        for _ in range(200):
            if ready.exists() or proc.poll() is not None:
                break
            subprocess.run(["sleep", "0.05"])
        assert ready.exists(), "child never entered the guard"
        assert caps(tree)[0].mps == 256
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=20) == 143
    finally:
        proc.kill()
    assert (tree.config_bytes(DEV), tree.config_bytes(PORT)) == before


def test_a_field_the_function_does_not_let_change_is_refused_and_the_rest_restored(tree,
                                                                                  monkeypatch):
    """The device keeps its MRRS (QEMU's functions hardwire MPS/MRRS: the VM harness meets this
    on a real kernel, sim/vm): the sweep must not run labelled with sizes not in force."""
    before = tree.config_bytes(DEV), tree.config_bytes(PORT)
    write = PciFunction.write_devctl_fields

    def hardwired_mrrs(self, cap_offset, mask, value):
        old = write(self, cap_offset, mask, value)
        if self.bdf == DEV:  # the device puts its MRRS bits back at once
            write(self, cap_offset, 0x7000, old)
        return old

    monkeypatch.setattr(PciFunction, "write_devctl_fields", hardwired_mrrs)
    with pytest.raises(InvalidRequest, match="0000:01:00.0 kept MPS 256 / MRRS 512 when MPS "
                                             "256 / MRRS 128 was written.*read-only"):
        with guard(tree, mps=256, mrrs=128, allow_write=True):
            pytest.fail("the guard must not let the sweep run")
    assert (tree.config_bytes(DEV), tree.config_bytes(PORT)) == before
