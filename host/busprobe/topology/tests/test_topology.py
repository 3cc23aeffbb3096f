"""Topology readers on fixture sysfs trees (one per case) and on this machine's /sys."""

import os
from pathlib import Path

import pytest
from busprobe.targets import describe
from busprobe.topology import format_hops, topology_for
from busprobe.transport import DeviceNotFound, InvalidRequest


def usb_device_below(tree, hub_path, name, **kw):
    return tree.add_usb(name, parent=hub_path, vid=0x1209, pid=0x0001, serial="BP2-0001",
                        product="busprobe USB2 HS", **kw)


def test_ehci_port_names_the_controller_driver_and_its_pci_device(tree):
    root_hub = tree.usb_controller("0000:00:1d.0", "ehci-pci")
    usb_device_below(tree, root_hub, "1-1")
    hops = topology_for("usb:1209:0001", sysfs_root=tree.sys)
    assert [h["kind"] for h in hops] == ["usb-host-controller", "usb-root-hub", "usb-device"]
    assert hops[0]["name"] == "0000:00:1d.0" and hops[0]["driver"] == "ehci-pci"
    assert "host profile ehci" in hops[0]["description"]
    assert hops[-1]["name"] == "1-1" and hops[-1]["speed"] == "high"
    bus = describe("usb:1209:0001", sysfs_root=tree.sys).bus
    assert (bus.kind, bus.host_profile) == ("usb2-hs", "ehci")


def test_xhci_port_maps_to_the_xhci_profile(tree):
    root_hub = tree.usb_controller("0000:00:14.0", "xhci_hcd")
    usb_device_below(tree, root_hub, "1-4")
    hops = topology_for("usb:1209:0001#BP2-0001", sysfs_root=tree.sys)
    assert hops[0]["driver"] == "xhci_hcd"
    assert describe("usb:1209:0001", sysfs_root=tree.sys).bus.host_profile == "xhci"


def test_hub_chain_lists_every_hub_between_root_and_device(tree):
    root_hub = tree.usb_controller("0000:00:14.0", "xhci_hcd")
    hub1 = tree.add_usb("1-2", parent=root_hub, vid=0x05E3, pid=0x0610, hub=True,
                        product="USB2.1 Hub", driver="hub")
    hub2 = tree.add_usb("1-2.3", parent=hub1, vid=0x05E3, pid=0x0610, hub=True, driver="hub")
    usb_device_below(tree, hub2, "1-2.3.1")
    hops = topology_for("usb:1209:0001", sysfs_root=tree.sys)
    assert [h["name"] for h in hops] == ["0000:00:14.0", "usb1", "1-2", "1-2.3", "1-2.3.1"]
    assert [h["kind"] for h in hops[2:]] == ["usb-hub", "usb-hub", "usb-device"]
    assert "1-2.3.1" in format_hops(hops)


def test_two_boards_with_one_serial_are_told_apart_by_their_port(tree):
    root_hub = tree.usb_controller("0000:00:14.0", "xhci_hcd")
    usb_device_below(tree, root_hub, "1-1")
    usb_device_below(tree, root_hub, "1-3")
    assert topology_for("usb:1209:0001#BP2-0001@1-3", sysfs_root=tree.sys)[-1]["name"] == "1-3"
    assert topology_for("usb:1209:0001@1-1", sysfs_root=tree.sys)[-1]["name"] == "1-1"
    with pytest.raises(DeviceNotFound, match="no USB device 1209:0001 at port 1-2"):
        topology_for("usb:1209:0001@1-2", sysfs_root=tree.sys)


def test_superspeed_device_on_a_usb2_port_is_noted(tree):
    root_hub = tree.usb_controller("0000:00:14.0", "xhci_hcd")
    usb_device_below(tree, root_hub, "1-1", version=" 3.20")
    hops = topology_for("usb:1209:0001", sysfs_root=tree.sys)
    assert any("supports SuperSpeed" in note for note in hops[-1]["notes"])


def test_missing_usb_device_is_a_one_line_error(tree):
    tree.usb_controller("0000:00:14.0", "xhci_hcd")
    with pytest.raises(DeviceNotFound, match="no USB device 1209:0001"):
        topology_for("usb:1209:0001", sysfs_root=tree.sys)
    with pytest.raises(InvalidRequest, match="VID:PID"):
        topology_for("usb:nonsense", sysfs_root=tree.sys)


def test_pcie_switch_path_reads_caps_status_payload_and_slot(tree):
    tree.add_pci("0000:00:1c.0", port="root-port", driver="pcieport", mps_supported=256,
                 mps=256, link_speed="gen3", link_width=4)
    tree.add_pci("0000:01:00.0", parent="0000:00:1c.0", port="switch-upstream",
                 driver="pcieport", mps=256, link_speed="gen3", link_width=4)
    tree.add_pci("0000:02:01.0", parent="0000:01:00.0", port="switch-downstream",
                 driver="pcieport", mps=256, link_speed="gen2", link_width=1)
    tree.add_pci("0000:03:00.0", parent="0000:02:01.0", driver="vfio-pci", slot=4,
                 mps_supported=512, mps=256, mrrs=1024, link_speed="gen2", link_width=1)
    hops = topology_for("pcie:0000:03:00.0", sysfs_root=tree.sys)
    assert [h["kind"] for h in hops] == ["pci-root-port", "pci-switch-upstream",
                                         "pci-switch-downstream", "pci-endpoint"]
    device = hops[-1]
    assert (device["speed"], device["width"], device["speed_cap"]) == ("gen2", 1, "gen2")
    assert (device["mps"], device["mps_supported"], device["mrrs"]) == (256, 512, 1024)
    assert device["slot"] == "4" and device["driver"] == "vfio-pci"
    assert not any(h["notes"] for h in hops)
    target = describe("pcie:0000:03:00.0", sysfs_root=tree.sys)
    assert target.hops_json() == hops
    bus = target.bus
    assert (bus.kind, bus.speed, bus.width, bus.mps, bus.mrrs) == ("pcie", "gen2", 1, 256, 1024)


def test_link_trained_below_capability_is_flagged(tree):
    tree.add_pci("0000:00:1c.0", port="root-port", driver="pcieport", link_speed="gen1",
                 link_width=1)
    tree.set_link("0000:00:1c.0", speed_cap="gen2", width_cap=4)
    tree.add_pci("0000:01:00.0", parent="0000:00:1c.0", link_speed="gen1", link_width=1)
    tree.set_link("0000:01:00.0", speed_cap="gen2", width_cap=4)
    hops = topology_for("pcie:0000:01:00.0", sysfs_root=tree.sys)
    notes = hops[-1]["notes"]
    assert any("trained at gen1 although both ends support gen2" in n for n in notes)
    assert any("trained at x1 although both ends support x4" in n for n in notes)
    assert "speed below capability" in format_hops(hops)


def test_unprivileged_config_view_falls_back_to_sysfs_attributes(tree):
    tree.add_pci("0000:00:1c.0", port="root-port", link_speed="gen2", size=64)
    tree.add_pci("0000:01:00.0", parent="0000:00:1c.0", link_speed="gen2", size=64)
    hops = topology_for("pcie:0000:01:00.0", sysfs_root=tree.sys)
    assert hops[-1]["speed"] == "gen2" and hops[-1]["width"] == 1
    assert "mps" not in hops[-1]
    assert any("non-root" in n for n in hops[-1]["notes"])


def test_missing_pci_device_is_a_one_line_error(tree):
    with pytest.raises(DeviceNotFound, match="no PCI device 0000:09:00.0"):
        topology_for("pcie:0000:09:00.0", sysfs_root=tree.sys)


def test_a_full_speed_device_still_shows_its_path_but_has_no_model(tree):
    root_hub = tree.usb_controller("0000:00:14.0", "xhci_hcd")
    usb_device_below(tree, root_hub, "1-1", speed="12")
    target = describe("usb:1209:0001", sysfs_root=tree.sys)
    assert target.bus is None and target.hops[-1].speed == "full"
    with pytest.raises(InvalidRequest, match="runs at full speed"):
        target.require_bus()


def test_simulated_targets_have_no_sysfs_path():
    with pytest.raises(InvalidRequest, match="sim:pcie is simulated"):
        topology_for("sim:pcie")


@pytest.mark.skipif(not Path("/sys/bus/pci/devices").is_dir(), reason="no /sys on this machine")
def test_real_sys_every_pci_device_reads_without_crashing():
    devices = sorted(os.listdir("/sys/bus/pci/devices"))
    for bdf in devices:
        hops = topology_for(f"pcie:{bdf}")
        assert hops[-1]["name"] == bdf
        format_hops(hops)
    usb = Path("/sys/bus/usb/devices")
    for entry in sorted(usb.iterdir()) if usb.is_dir() else []:
        if ":" in entry.name or not (entry / "idVendor").exists():
            continue
        vid, pid = (entry / "idVendor").read_text().strip(), (entry / "idProduct").read_text()
        format_hops(topology_for(f"usb:{vid}:{pid.strip()}"))


def test_hops_from_other_backends_print_and_flag_with_their_own_key_names():
    hops = [{"name": "root port (cocotbext-pcie RootComplex)", "bdf": "0000:00:00.0",
             "link_speed": "gen1", "link_width": 1, "link_speed_cap": "gen2",
             "link_width_cap": 1},
            {"bdf": "0000:01:00.0", "link_speed": "gen2", "link_width": 1,
             "link_speed_cap": "gen2", "link_width_cap": 1, "mps": 256, "mrrs": 512}]
    text = format_hops(hops)
    assert "gen1 x1 (cap gen2 x1)" in text and "0000:01:00.0" in text and "256/512" in text
    assert "trained at gen1 although it supports gen2" in text
    assert "gen2 although" not in text.split("hop 1")[-1]
