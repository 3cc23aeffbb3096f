"""The tool's own ceiling: the real host path against a device that costs nothing, per point in
the result, and the verdict ``tool-limited`` when a point is within its spread of it."""

import pytest
from busprobe.sweep import Sweep, SweepPlan
from busprobe.tool_ceiling import ToolFigure, libusb_figure, tool_ceiling, vfio_figure
from busprobe.verdict import assess


def test_the_native_libusb_path_sustains_what_a_superspeed_port_needs_at_4k():
    figure = libusb_figure("in", 4096, 8)
    # A SuperSpeed port at 4 KiB completes ~116 k transfers a second (issue 32).
    assert figure.path == "libusb-native" and figure.completions_per_s >= 120e3
    assert figure.bytes_per_s == pytest.approx(figure.completions_per_s * 4096)


def test_the_python_loop_is_measured_through_python_libusb1_in_a_child_process():
    figure = libusb_figure("out", 512, 1, native=False)
    assert figure.path == "libusb-python" and figure.completions_per_s > 1e3


@pytest.mark.parametrize("direction", ["write", "read"])
def test_the_vfio_path_streams_checked_data_through_the_real_driver(direction):
    figure = vfio_figure(direction, 4096, 4)
    assert figure.path == "vfio" and figure.completions_per_s > 1e3


def test_a_simulation_or_a_direction_without_a_path_has_no_tool_ceiling():
    assert tool_ceiling(None, "in", 4096, 8) is None
    assert tool_ceiling("libusb", "loopback", 4096, 8) is None


def _sweep(loopback_factory, rate_of_tool):
    transport = loopback_factory[0]()
    transport.tool_path = "libusb"
    plan = SweepPlan(directions=("in",), lengths=(4096, 65536), queue_depths=(8,))

    def tool(path, direction, length, depth):
        return ToolFigure("libusb-native", direction, length, depth, rate_of_tool / length,
                          rate_of_tool, 100)

    points = [p.to_json() for p in Sweep(transport, plan, tool=tool).run()]
    return transport, points


def test_each_point_records_the_tool_ceiling_and_whether_it_was_within_the_spread(
        loopback_factory):
    transport, points = _sweep(loopback_factory, rate_of_tool=1e12)
    assert all(p["tool_ceiling"] == 1e12 and p["tool_path"] == "libusb-native"
               and p["tool_limited"] is False for p in points)
    _, near = _sweep(loopback_factory, rate_of_tool=points[0]["throughput"] * 1.005)
    assert near[0]["tool_limited"] is True


def test_a_plateau_at_the_tool_ceiling_is_tool_limited_with_the_bus_verdict_beside_it(
        loopback_factory):
    transport, points = _sweep(loopback_factory, rate_of_tool=1e12)
    for point in points:
        point.update(tool_ceiling=point["throughput"], tool_limited=True,
                     tool_completions_per_s=point["throughput"] / point["length"])
    entries = assess({"bus": transport.bus.to_json(), "points": points})
    assert entries[0]["verdict"] == "tool-limited"
    assert "TOOL-LIMITED" in entries[0]["explanation"]
    assert "Otherwise" in entries[0]["explanation"]
