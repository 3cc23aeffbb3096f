"""The hop several targets share, found from sysfs-shaped fixture trees (conftest.py): a PCIe
switch, the chipset's uplink (DMI) behind two chipset root ports, the root complex behind two CPU
root ports, and a USB hub or host controller."""

import pytest
from busprobe.topology import topology_for
from busprobe.topology.shared import shared_hop

GEN2_X1 = {"link_speed": "gen2", "link_width": 1}


def test_shared_two_cards_behind_one_switch_share_its_upstream_port(tree):
    tree.add_pci("0000:00:1c.0", port="root-port", driver="pcieport", link_speed="gen3",
                 link_width=4)
    tree.add_pci("0000:01:00.0", parent="0000:00:1c.0", port="switch-upstream",
                 driver="pcieport", link_speed="gen3", link_width=4)
    for i in (1, 2):
        tree.add_pci(f"0000:02:0{i}.0", parent="0000:01:00.0", port="switch-downstream",
                     driver="pcieport", **GEN2_X1)
        tree.add_pci(f"0000:0{2 + i}:00.0", parent=f"0000:02:0{i}.0", driver="vfio-pci",
                     **GEN2_X1)
    paths = [topology_for(f"pcie:0000:0{2 + i}:00.0", sysfs_root=tree.sys) for i in (1, 2)]
    hop = shared_hop(paths)
    assert (hop["kind"], hop["name"]) == ("pci-switch-upstream", "0000:01:00.0")
    assert hop["what"] == "switch upstream 0000:01:00.0"


def test_shared_cards_on_two_chipset_root_ports_share_the_dmi_uplink(tree):
    for port, bus in (("0000:00:1c.0", 2), ("0000:00:1c.4", 3)):
        tree.add_pci(port, port="root-port", driver="pcieport", **GEN2_X1)
        tree.add_pci(f"0000:0{bus}:00.0", parent=port, driver="vfio-pci", **GEN2_X1)
    paths = [topology_for(f"pcie:0000:0{bus}:00.0", sysfs_root=tree.sys) for bus in (2, 3)]
    hop = shared_hop(paths)
    assert hop["kind"] == "pci-chipset-uplink" and "DMI" in hop["what"]
    assert "0000:00:1c.0, 0000:00:1c.4" in hop["what"]


def test_shared_cards_on_two_cpu_root_ports_share_only_the_root_complex(tree):
    for port, bus in (("0000:00:01.0", 1), ("0000:00:01.1", 2)):
        tree.add_pci(port, port="root-port", driver="pcieport", link_speed="gen3", link_width=4)
        tree.add_pci(f"0000:0{bus}:00.0", parent=port, driver="vfio-pci", **GEN2_X1)
    paths = [topology_for(f"pcie:0000:0{bus}:00.0", sysfs_root=tree.sys) for bus in (1, 2)]
    assert shared_hop(paths)["kind"] == "pci-root-complex"


def test_shared_usb_devices_behind_one_hub_share_the_hub_not_beyond(tree):
    root_hub = tree.usb_controller("0000:00:14.0", "xhci_hcd")
    hub = tree.add_usb("1-2", parent=root_hub, vid=0x05E3, pid=0x0610, hub=True, driver="hub")
    tree.add_usb("1-2.1", parent=hub, vid=0x1209, pid=0x0001, serial="A")
    tree.add_usb("1-2.2", parent=hub, vid=0x1209, pid=0x0001, serial="B")
    paths = [topology_for(f"usb:1209:0001#{s}", sysfs_root=tree.sys) for s in "AB"]
    hop = shared_hop(paths)
    assert (hop["kind"], hop["name"]) == ("usb-hub", "1-2")


def test_shared_usb_devices_on_two_root_ports_share_the_root_hub_and_controller(tree):
    root_hub = tree.usb_controller("0000:00:14.0", "xhci_hcd")
    tree.add_usb("1-1", parent=root_hub, vid=0x1209, pid=0x0001, serial="A")
    tree.add_usb("1-2", parent=root_hub, vid=0x1209, pid=0x0001, serial="B")
    paths = [topology_for(f"usb:1209:0001#{s}", sysfs_root=tree.sys) for s in "AB"]
    assert (shared_hop(paths)["kind"], shared_hop(paths)["name"]) == ("usb-root-hub", "usb1")


def test_shared_usb_devices_on_two_ehci_root_ports_share_the_controller_schedule(tree):
    """Issue 47.1: an EHCI controller's root ports are one bus (one asynchronous schedule), so
    the hop two devices on them share is the controller, named with why."""
    root_hub = tree.usb_controller("0000:00:1d.0", "ehci-pci")
    tree.add_usb("1-1", parent=root_hub, vid=0x1209, pid=0x0001, serial="A")
    tree.add_usb("1-2", parent=root_hub, vid=0x1209, pid=0x0001, serial="B")
    paths = [topology_for(f"usb:1209:0001#{s}", sysfs_root=tree.sys) for s in "AB"]
    hop = shared_hop(paths)
    assert (hop["kind"], hop["name"]) == ("usb-host-controller", "0000:00:1d.0")
    assert hop["what"].startswith("host controller 0000:00:1d.0 (EHCI: one schedule for all "
                                  "its root ports")
    assert "one 480 Mb/s bus" in hop["what"]


def test_shared_the_same_device_twice_is_an_error_and_one_path_has_nothing_shared(tree):
    path = [{"kind": "pci-root-port", "name": "0000:00:1c.0"},
            {"kind": "pci-endpoint", "name": "0000:02:00.0"}]
    with pytest.raises(ValueError, match="named twice"):
        shared_hop([path, path])
    assert shared_hop([path]) is None
