"""The xHCI pass's two USB 2.0 devices at once (issue 30): checks of what the guest wrote."""

from busprobe.sim.vm.usb_pass import PAIR_SELECTOR


def check_the_pair(usb_pass):
    """Two exports of ``sim:usb2`` with one serial, plugged into two root ports of the guest's
    xHCI, told apart by their port paths (``usb:VID:PID#SERIAL@PORT``) and swept alone and then
    together by the real busprobe through the guest kernel: every byte checked on both, 0
    errors, and the verdict's shared hop is what the two share in the guest's sysfs, the xHCI
    controller's high-speed root hub ``usb1``. Whether the pair reads ``shared-limited``,
    ``independent`` or ``inconclusive`` is the two simulators' and QEMU's share of this
    machine's cores, not the bus's, so any of the three passes, never another hop (a fresh-clone
    run read 3 % short together against a 2.8 % repeat band with no plateau: inconclusive)."""
    (ports,) = usb_pass.boot.find("pair-ports")
    first, second = ports.split()[1:3]
    assert first != second and first.startswith("1-") and second.startswith("1-"), ports
    assert usb_pass.status("pair-sweep") == "rc=0 ", usb_pass.text("pair-sweep.err")
    doc = usb_pass.result("pair-sweep")
    assert doc["complete"] and doc["errors"] == 0, doc.get("error")
    assert [t["device"] for t in doc["targets"]] == [f"{PAIR_SELECTOR}@{first}",
                                                      f"{PAIR_SELECTOR}@{second}"]
    for target in doc["targets"]:
        points = target["alone"] + target["together"]
        assert points and all(p["errors"] == 0 and p["bytes"] > 0 for p in points)
        assert target["topology"][-1]["name"] in (first, second)
    (verdict,) = doc["shared"]
    assert verdict["verdict"] in ("shared-limited", "independent", "inconclusive"), verdict
    assert verdict["explanation"], verdict
    hop = verdict["shared_hop"] or {}
    if verdict["verdict"] == "shared-limited":  # what the two share in the guest: bus 1's root
        assert (hop.get("kind"), hop.get("name")) == ("usb-root-hub", "usb1"), hop
    assert doc["host"]["emulated"] == "qemu"
    together = doc["together"][-1]
    print(f"  => two USB 2.0 devices behind xhci at {first} and {second}: 0 errors; sum together "
          f"{together['sum_throughput'] / 1e6:.2f} MB/s against {together['sum_alone'] / 1e6:.2f} "
          f"alone (QEMU's and the simulators' figures); verdict {verdict['verdict']}, shared hop "
          f"{hop.get('kind')} {hop.get('name')}")
