"""No figure above the physics: the demo's ladder on every host profile and the README's PCIe
sweep, through the simulated gateware. The USB device times whole microframes, so its figure can
never exceed what the link allows; the host's window is reported beside it and, where the host
is not the limit, agrees. The PCIe engine times writes from the first TLP it hands the hard IP to
the last, and the IP's transmit buffer still holds the last few then: its figure is held to the
model of that window (``device_ceiling``, docs/DESIGN.md §4.6), the host's to the link."""

import json

import pytest
from busprobe.cli import main
from busprobe.model.usb2_hosts import builtin_profiles

DEMO_LADDER = ["--direction", "out", "--queue-depth", "1", "--lengths",
               "512,2K,8K,32K,128K,256K", "--no-progress"]


@pytest.mark.sim
@pytest.mark.parametrize("profile", builtin_profiles())
def test_no_point_of_the_demo_ladder_reads_above_the_link_model(profile, tmp_path, capsys):
    out = tmp_path / f"{profile}.json"
    status = main(["sweep", "--device", f"sim:usb2?host={profile}", *DEMO_LADDER,
                   "--json", str(out)])
    assert status == 0, capsys.readouterr().err
    points = json.loads(out.read_text())["points"]
    assert [p["errors"] for p in points] == [0] * 6
    for p in points:
        assert p["device_throughput"] <= p["link_ceiling"] * (1 + 1e-12), p
        assert p["link_efficiency"] <= 1.0 + 1e-12
    if profile == "ideal":  # the host is not the limit: both clocks tell the same story
        for p in points:
            assert abs(p["throughput"] / p["device_throughput"] - 1) <= 0.005, p


@pytest.mark.sim
def test_the_readme_pcie_sweep_reads_no_point_above_the_link_model(tmp_path, capsys):
    # README: busprobe sweep --device "sim:pcie?gen=2&width=1" --direction write
    #         --mps 128,256,512 --lengths 64K (the DMA engine counts cycles; queue depth 8)
    out = tmp_path / "pcie.json"
    status = main(["sweep", "--device", "sim:pcie?gen=2&width=1", "--direction", "write",
                   "--mps", "128,256,512", "--lengths", "64K", "--no-progress",
                   "--json", str(out)])
    assert status == 0, capsys.readouterr().err
    points = json.loads(out.read_text())["points"]
    assert [p["mps"] for p in points] == [128, 256, 512] and all(p["errors"] == 0
                                                               for p in points)
    for p in points:
        assert p["device_throughput"] <= p["device_ceiling"], p
        assert p["throughput"] <= p["link_ceiling"], p
