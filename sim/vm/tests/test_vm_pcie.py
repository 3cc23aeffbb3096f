"""busprobe's real PCIe backend on a real kernel: a q35 guest with an endpoint behind a PCIe root
port and an IOMMU. Topology from real config space, the MPS/MRRS guard there, VFIO up to the
point where busprobe finds the endpoint is not its own."""

import json

import pytest
from busprobe.sim.vm.pcie_pass import ENDPOINT, SMALL_BAR_ENDPOINT, run_pcie_pass

PORT = "0000:00:03.0"  # q35's first free slot takes the root port


@pytest.mark.vm
def test_topology_guard_and_vfio_meet_real_config_space_and_a_real_iommu():
    pcie = run_pcie_pass()
    print(f"\n== PCIe pass on q35 + intel-iommu ({pcie.boot.seconds:.0f} s, guest ready after "
          f"{pcie.boot.ready_seconds or 0:.1f} s) ==")
    for line in pcie.boot.marks:
        print(f"  {line}")
    print(f"  {pcie.boot.time_line()}")
    assert "checks-done" in pcie.boot.marks, f"the guest did not finish: see {pcie.boot.console}"

    # Every hop, link capability vs status and MPS/MRRS, from the kernel's config space.
    port, endpoint = json.loads(pcie.text("topology.out"))
    assert (port["name"], port["kind"], port["driver"]) == (PORT, "pci-root-port", "pcieport")
    assert (endpoint["name"], endpoint["kind"]) == (ENDPOINT, "pci-endpoint")
    assert (port["speed"], port["width"], port["speed_cap"], port["width_cap"]) == \
        ("gen1", 1, "gen4", 32)
    assert (endpoint["speed_cap"], endpoint["width_cap"]) == ("gen1", 1)
    for hop in (port, endpoint):
        assert (hop["mps"], hop["mps_supported"], hop["mrrs"]) == (128, 128, 128)
    before = [line for line in pcie.lines("topology") if " mps=" in line]
    assert len(before) == 2

    # The guard writes through sysfs and reads back: QEMU's functions hardwire MRRS, and the
    # guard says so in one line instead of sweeping under a size not in force.
    (written,) = pcie.lines("guard-written")
    assert "refused" in written and "read-only on this function" in written
    # Never above what both ends support; config space as before after each of the three exits.
    entered = pcie.lines("guard-entered")
    assert len(entered) == 3 and all(f"capped at 128 ({ENDPOINT} supports 128, upstream port "
                                     f"{PORT} supports 128)" in line for line in entered)
    assert pcie.lines("guard-exit") == ["normal", "interrupted SIGINT",
                                        "interrupted terminated (SIGTERM)"]
    assert pcie.lines("guard-INT") == ["rc=0"] and pcie.lines("guard-TERM") == ["rc=0"]
    for after in ("after-written", "after-normal", "after-INT", "after-TERM"):
        assert [line for line in pcie.lines(after) if " mps=" in line] == before, after
    print(f"  => config space after the refused write and after a normal exit, SIGINT and "
          f"SIGTERM reads as before: {'; '.join(before)}")

    # VFIO: bound, group and container opened, BAR0 mapped, a DMA buffer mapped and used.
    assert pcie.lines("driver") == ["vfio-pci"]
    assert pcie.lines("vfio") == ["rc=0"]
    assert pcie.lines("vfio-bar0")[0].startswith("size=131072 ")
    assert pcie.lines("vfio-dma")[0].endswith("size=65536 readback=busprobe")
    # ... and the sweep stops in one line: the endpoint is not a busprobe device.
    (sweep,) = pcie.lines("sweep")
    assert sweep.startswith("rc=2 busprobe: error: not a busprobe PCIe")
    # So is a function whose BAR0 cannot hold busprobe's registers (once an IndexError).
    (small,) = pcie.lines("small-bar")
    assert small.startswith(f"rc=2 busprobe: error: {SMALL_BAR_ENDPOINT}: not a busprobe PCIe "
                            "bitstream (BAR0 is 4096 bytes")
