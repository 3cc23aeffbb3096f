"""No host-timed or device-timed figure above its point's ceiling or above the physics, on the
simulated buses.

- The demo's ladder on every host profile (OUT, queue depth 1, 512 B..256 KiB; on xHCI every
  point once read 100.1-100.6 % of the steady-state model it was compared with, issue 32). The
  USB device times whole microframes, so its figure can never exceed what the link allows; the
  host's window is reported beside it and, where the host is not the limit, agrees.
- The README's PCIe sweep. The PCIe engine times writes from the first TLP it hands the hard IP
  to the last, and the IP's transmit buffer still holds the last few then: its figure is held to
  the model of that window (``device_ceiling``, docs/DESIGN.md §6.6), the host's to the link.
- A ladder of odd lengths on each bus (a short last packet or TLP, one packet and a byte, a
  length of no round size) behind a host with completion, resubmit and re-token latencies.

Every repeat, on the host's clock and on the device's, must read at most its point's ceiling (the
model of the run it made, ``point_models.run_ceiling``), and the table's ``% ceiling`` column at
most 100.0.
"""

import json
import re
from pathlib import Path

import pytest
from busprobe.cli import main
from busprobe.model.usb2_hosts import builtin_profiles


def demo_ladder() -> list[str]:
    """The Makefile's ``DEMO_SWEEP`` (its one definition): the sweep's options after ``sweep``."""
    text = (Path(__file__).resolve().parents[3] / "Makefile").read_text()
    (definition,) = re.findall(r"^DEMO_SWEEP\s*:=\s*((?:.*\\\n)*.*)$", text, re.MULTILINE)
    words = definition.replace("\\\n", " ").split()
    assert words[0] == "sweep", words
    return [word for word in words[1:] if word != "--no-progress"]


DEMO_LADDER = demo_ladder()


def sweep(capsys, device, *args):
    status = main(["sweep", "--device", device, "--no-progress", "--json", "-", *args])
    out, err = capsys.readouterr()
    assert status == 0, err
    return json.loads(out)


def assert_within_ceilings(doc):
    from busprobe.results import format_table

    for point in doc["points"]:
        label = f"{point['direction']} {point['length']} B qd {point['queue_depth']}"
        assert point["errors"] == 0, label
        assert point["ceiling"] is not None, label
        assert max(point["samples"]) <= point["ceiling"], label
        device = [s for s in point["device_samples"] if s is not None]
        if device and point.get("device_ceiling") is not None:
            assert max(device) <= point["device_ceiling"], label
    # The printed "% ceiling" column, next to last (errors last).
    for line in format_table(doc).splitlines()[2:2 + len(doc["points"])]:
        assert float(line.split()[-2]) <= 100.0, line


#: The demo's ladder behind xHCI (where issue 32's points read above their model) and the ideal
#: host (where both clocks must agree) in ``make test``; behind the other profiles (EHCI's is
#: the demo's second sweep) in ``make bench``, to keep ``make test`` within its time.
IN_TEST = ("xhci", "ideal")


@pytest.mark.sim
@pytest.mark.parametrize("profile", [
    p if p in IN_TEST else pytest.param(p, marks=pytest.mark.bench) for p in builtin_profiles()])
def test_no_point_of_the_demo_ladder_reads_above_its_ceilings_or_the_link_model(profile, capsys):
    doc = sweep(capsys, f"sim:usb2?host={profile}", *DEMO_LADDER)
    assert len(doc["points"]) == 6
    assert_within_ceilings(doc)
    for p in doc["points"]:
        assert p["device_throughput"] <= p["link_ceiling"] * (1 + 1e-12), p
        assert p["link_efficiency"] <= 1.0 + 1e-12
    if profile == "ideal":  # the host is not the limit: both clocks tell the same story
        for p in doc["points"]:
            assert abs(p["throughput"] / p["device_throughput"] - 1) <= 0.005, p


@pytest.mark.sim
def test_the_readme_pcie_sweep_reads_no_point_above_the_link_model(capsys):
    # README: busprobe sweep --device "sim:pcie?gen=2&width=1" --direction write
    #         --mps 128,256,512 --lengths 64K (the DMA engine counts cycles; queue depth 8)
    doc = sweep(capsys, "sim:pcie?gen=2&width=1", "--direction", "write",
                "--mps", "128,256,512", "--lengths", "64K")
    points = doc["points"]
    assert [p["mps"] for p in points] == [128, 256, 512] and all(p["errors"] == 0
                                                               for p in points)
    for p in points:
        assert p["device_throughput"] <= p["device_ceiling"], p
        assert p["throughput"] <= p["link_ceiling"], p


@pytest.mark.sim
def test_an_odd_length_ladder_on_usb2_reads_at_most_its_ceilings(capsys):
    doc = sweep(capsys, "sim:usb2?host=xhci", "--direction", "in,out", "--queue-depth", "1,4",
                "--lengths", "513,100003", "--min-bytes", "64K")
    assert len(doc["points"]) == 8
    assert_within_ceilings(doc)


@pytest.mark.sim
def test_an_odd_length_ladder_on_usb3_reads_at_most_its_ceilings(capsys):
    doc = sweep(capsys, "sim:usb3?host=vl805", "--direction", "in,out", "--queue-depth", "1,2",
                "--lengths", "1025,100003", "--min-bytes", "64K")
    assert len(doc["points"]) == 8
    assert_within_ceilings(doc)


@pytest.mark.sim
def test_an_odd_length_ladder_on_pcie_reads_at_most_its_ceilings(capsys):
    doc = sweep(capsys, "sim:pcie?latency_ns=400", "--direction", "write,read",
                "--queue-depth", "1,4", "--lengths", "520,4104")
    assert len(doc["points"]) == 8
    assert_within_ceilings(doc)
