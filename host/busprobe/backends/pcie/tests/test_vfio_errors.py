"""VFIO set-up errors: each common mistake ends in one line that says what to do.

The real-machine cases run against this machine's /sys and /dev (no busprobe board is attached,
and CI machines boot without an IOMMU); the bound/unbound/link cases use a fixture sysfs tree.
"""

import os
import pickle
import tempfile
from pathlib import Path

import pytest
from busprobe.backends.pcie import open_pcie
from busprobe.backends.pcie.sysfs_tree import ConfigSpec, SysfsTree
from busprobe.backends.pcie.vfio import VFIO_IOCTL, VfioDevice, VfioUnavailable, preflight
from busprobe.targets import open_transport
from busprobe.transport import DeviceGone, DeviceNotFound, InvalidRequest, PermissionDenied

DEV, PORT = "0000:01:00.0", "0000:00:1c.0"
REAL_GROUPS = Path("/sys/kernel/iommu_groups")


def real_pci_devices():
    root = Path("/sys/bus/pci/devices")
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def test_ioctl_numbers_match_linux_vfio_h():
    # Values of the kernel's macros, as printed by a C program including <linux/vfio.h>.
    assert VFIO_IOCTL["GET_API_VERSION"] == 0x3B64
    assert VFIO_IOCTL["GROUP_GET_DEVICE_FD"] == 0x3B6A
    assert VFIO_IOCTL["DEVICE_SET_IRQS"] == 0x3B6E
    assert VFIO_IOCTL["IOMMU_MAP_DMA"] == 0x3B71


def test_malformed_address_is_rejected_by_the_selector():
    with pytest.raises(InvalidRequest, match="expected DDDD:BB:DD.F"):
        open_transport("pcie:01:00.0")


def test_absent_device_on_this_machine():
    assert "0000:7e:1f.7" not in real_pci_devices()
    with pytest.raises(DeviceNotFound, match="no PCI device 0000:7e:1f.7.*busprobe list"):
        open_transport("pcie:0000:7e:1f.7").open()


@pytest.mark.skipif(not real_pci_devices() or (REAL_GROUPS.is_dir() and any(REAL_GROUPS.iterdir())),
                    reason="needs a machine with PCI devices and the IOMMU off")
def test_iommu_off_on_this_machine_says_how_to_enable_it():
    with pytest.raises(VfioUnavailable, match=r"enable IOMMU: add intel_iommu=on") as info:
        open_pcie_selector(f"pcie:{real_pci_devices()[0]}")
    assert "\n" not in str(info.value)


def open_pcie_selector(text):
    from busprobe.targets import describe
    return open_pcie(describe(text, sysfs_root=None)).open()


@pytest.fixture
def tree(tmp_path):
    t = SysfsTree(tmp_path)
    t.add_function(PORT, ConfigSpec(), driver="pcieport", iommu_group=3)
    return t


def test_device_on_another_driver_prints_the_rebind_commands(tree):
    tree.add_function(DEV, ConfigSpec(), parent=PORT, driver="xdma", iommu_group=7)
    with pytest.raises(VfioUnavailable) as info:
        preflight(DEV, sysfs_root=tree.sys, dev_root=tree.dev)
    assert str(info.value) == (
        f"{DEV} is bound to xdma, not vfio-pci; as root run: modprobe vfio-pci; "
        f"echo {DEV} > /sys/bus/pci/devices/{DEV}/driver/unbind; "
        f"echo vfio-pci > /sys/bus/pci/devices/{DEV}/driver_override; "
        f"echo {DEV} > /sys/bus/pci/drivers_probe")


def test_device_without_driver_needs_no_unbind(tree):
    tree.add_function(DEV, ConfigSpec(), parent=PORT, iommu_group=7)
    with pytest.raises(VfioUnavailable, match="not bound to any driver") as info:
        preflight(DEV, sysfs_root=tree.sys, dev_root=tree.dev)
    assert "unbind" not in str(info.value)


def test_missing_dev_vfio_node(tree):
    tree.add_function(DEV, ConfigSpec(), parent=PORT, driver="vfio-pci", iommu_group=7)
    with pytest.raises(VfioUnavailable, match=r"/dev/vfio/7 does not exist: load vfio-pci"):
        preflight(DEV, sysfs_root=tree.sys, dev_root=tree.dev)


def test_link_down_from_lnksta(tree):
    tree.add_function(DEV, ConfigSpec(link_up=False), parent=PORT, driver="vfio-pci",
                      iommu_group=7)
    (tree.dev / "vfio").mkdir()
    (tree.dev / "vfio" / "7").write_bytes(b"")
    if os.geteuid() != 0:
        pytest.skip("LnkSta is only readable from sysfs as root")
    with pytest.raises(DeviceGone, match=r"link is down \(LnkSta 0x0000"):
        preflight(DEV, sysfs_root=tree.sys, dev_root=tree.dev)


def test_checks_pass_then_missing_container_node_is_reported(tree):
    tree.add_function(DEV, ConfigSpec(), parent=PORT, driver="vfio-pci", iommu_group=7)
    (tree.dev / "vfio").mkdir()
    (tree.dev / "vfio" / "7").write_bytes(b"")
    group = preflight(DEV, sysfs_root=tree.sys, dev_root=tree.dev)
    assert (group.group, group.dev_path) == (7, tree.dev / "vfio" / "7")
    with pytest.raises(VfioUnavailable, match=r"vfio/vfio does not exist: modprobe vfio-pci"):
        VfioDevice(group, dev_root=tree.dev)


def test_permission_denied_on_group_node():
    """A real unprivileged process (root drops to uid 65534 in a fork) meets a mode-000 node."""
    base = Path(tempfile.mkdtemp(prefix="busprobe-vfio-"))
    try:
        os.chmod(base, 0o755)
        tree = SysfsTree(base)
        tree.add_function(DEV, ConfigSpec(), driver="vfio-pci", iommu_group=7)
        (tree.dev / "vfio").mkdir(mode=0o755)
        node = tree.dev / "vfio" / "7"
        node.write_bytes(b"")
        os.chmod(node, 0)
        for p in base.rglob("*"):
            if p.is_dir() and not p.is_symlink():
                os.chmod(p, 0o755)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: drop privileges, run the check, report the exception
            try:
                if os.geteuid() == 0:
                    os.setgid(65534)
                    os.setuid(65534)
                try:
                    preflight(DEV, sysfs_root=tree.sys, dev_root=tree.dev)
                    result = None
                except Exception as exc:
                    result = (type(exc).__name__, str(exc))
                os.write(write, pickle.dumps(result))
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as f:
            result = pickle.loads(f.read())
        os.waitpid(pid, 0)
    finally:
        for p in sorted(base.rglob("*"), reverse=True):
            if p.is_symlink() or p.is_file():
                p.unlink()
            else:
                p.rmdir()
        base.rmdir()
    assert result is not None and result[0] == PermissionDenied.__name__
    assert result[1].startswith(f"permission denied on {node}: run as root")


def test_topology_walks_from_the_root_port_to_the_device(tree):
    from busprobe.backends.pcie import PcieDmaTransport, VfioPlatform
    from busprobe.targets import describe

    tree.add_function(DEV, ConfigSpec(link_speed="gen2"), parent=PORT, driver="vfio-pci",
                      iommu_group=7)
    transport = PcieDmaTransport(VfioPlatform(describe(f"pcie:{DEV}", sysfs_root=None),
                                              sysfs_root=tree.sys, dev_root=tree.dev))
    assert [hop["name"] for hop in transport.topology()] == [PORT, DEV]


def test_configure_mps_goes_through_the_guard_and_close_restores(tree):
    from busprobe.backends.pcie import PcieDmaTransport, VfioPlatform
    from busprobe.backends.pcie.config import PciFunction
    from busprobe.targets import describe
    from busprobe.transport import InvalidRequest

    tree.add_function(DEV, ConfigSpec(mps_supported=512, mps=128), parent=PORT,
                      driver="vfio-pci", iommu_group=7)
    before = tree.config_bytes(DEV)
    plain = PcieDmaTransport(VfioPlatform(describe(f"pcie:{DEV}", sysfs_root=None),
                                          sysfs_root=tree.sys))
    with pytest.raises(InvalidRequest, match="--allow-config-write"):
        plain.configure(mps=256)
    if os.geteuid() != 0:
        pytest.skip("writing Device Control needs root")
    allowed = PcieDmaTransport(VfioPlatform(
        describe(f"pcie:{DEV}?allow_config_write=1", sysfs_root=None), sysfs_root=tree.sys))
    allowed.configure(mps=256)
    assert PciFunction(DEV, tree.sys).capability().mps == 256
    allowed.close()
    assert tree.config_bytes(DEV) == before
