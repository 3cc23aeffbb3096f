"""No figure above its bus without the reason beside it (issue 47.4): the README's two-device
example printed 53.75 MB/s for one USB 2.0 device alone, above the 53.248 MB/s that 13 x 512 B per
microframe allow. The tables mark such a figure and say why on a line of its own; a figure within
the link is printed as it was."""

from busprobe.cli.sweep_multi import format_multi_table
from busprobe.results import format_table
from busprobe.units import Units

LINK = 53.248e6  # USB 2.0 high speed bulk: 13 x 512 B per 125 µs microframe
HUB = [{"kind": "sim-usb-host-controller", "name": "sim usb2 host", "notes": []},
       {"kind": "sim-usb-hub", "name": "sim-hub", "notes": []}]


def point(throughput, length=16384, device=53.10e6):
    return {"direction": "in", "length": length, "queue_depth": 4, "throughput": throughput,
            "device_throughput": device, "ceiling": 53.80e6, "link_ceiling": LINK,
            "errors": 0}


def two_devices_behind_a_hub():
    targets = [{"device": f"sim:usb2?devices=2&attach=hub#{i}", "error": None,
                "topology": [*HUB, {"kind": "sim-usb-hub-port", "name": f"sim-hub port {i + 1}",
                                    "notes": []}],
                "alone": [point(53.75e6), point(53.10e6, length=65536)],
                "together": [point(26.84e6 - i * 0.1e6), point(26.5e6, length=65536)]}
               for i in (0, 1)]
    rows = [{"direction": "in", "length": 16384, "queue_depth": 4, "sum_throughput": 53.47e6,
             "sum_alone": 107.5e6},
            {"direction": "in", "length": 65536, "queue_depth": 4, "sum_throughput": 53.0e6,
             "sum_alone": 106.2e6}]
    return {"targets": targets, "together": rows, "shared": []}


def test_a_figure_above_the_link_is_marked_in_the_multi_target_table_and_said_why():
    lines = format_multi_table(two_devices_behind_a_hub(), Units.MB).splitlines()
    first, second = lines[2], lines[3]
    # 16K: each alone and the sum on the one bus behind the hub read above 53.25 MB/s.
    assert first.split(" | ")[3] == "53.75 MB/s^" and first.split(" | ")[5] == "53.75 MB/s^"
    assert first.split(" | ")[4] == "26.84 MB/s"  # within the link: as before
    assert first.split(" | ")[7] == "53.47 MB/s^"
    assert "^" not in second  # 64K: every figure within the link
    notes = [line for line in lines if line.startswith("^ ")]
    assert len(notes) == 3
    assert notes[0].startswith("^ #0 alone in 16KB qd 4: 53.75 MB/s is 0.9 % above what the "
                               "link allows (53.25 MB/s)")
    assert "timed by the device over whole bus intervals it is 53.10 MB/s" in notes[0]
    assert "one shared bus" in notes[2]


def test_a_sum_on_separate_buses_is_held_to_the_links_together_not_one():
    doc = two_devices_behind_a_hub()
    for target in doc["targets"]:  # two root ports, a bus each: nothing on the way is shared
        target["topology"] = target["topology"][:1] + [
            {"kind": "sim-usb-root-port", "name": target["device"][-1], "notes": []}]
        target["together"][0]["throughput"] = 53.0e6
    doc["together"][0]["sum_throughput"] = 106.0e6
    table = format_multi_table(doc, Units.MB)
    assert "106.00 MB/s^" not in table and "106.00 MB/s" in table


def test_a_host_timed_figure_above_the_link_is_marked_in_the_sweep_table():
    doc = {"points": [point(53.75e6), point(53.10e6, length=65536)], "complete": True}
    lines = format_table(doc, Units.MB).splitlines()
    assert "53.75^" in lines[2] and "^" not in lines[3]
    assert any(line.startswith("^ in 16KB qd 4: 53.75 MB/s is 0.9 % above") for line in lines)
