"""Repeats as measurements with error bars: ``mean ± spread`` in the table, error bars in the
plots, and compare calls a gap a difference only beyond both runs' spreads."""

import copy
import json
from pathlib import Path

from busprobe.cli import main
from busprobe.results import format_table
from busprobe.stats import error_bar, point_spread

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "results"


def _scaled(doc, factor, spread):
    """``doc`` with every throughput times ``factor`` and repeats ``± spread`` (relative)."""
    doc = copy.deepcopy(doc)
    for point in doc["points"]:
        middle = point["throughput"] * factor
        point["samples"] = [middle * (1 - spread), middle, middle * (1 + spread)]
        point["throughput"] = middle
        point["throughput_min"], point["throughput_max"] = min(point["samples"]), \
            max(point["samples"])
        point["repeats"] = 3
    doc.pop("ceiling", None)
    doc.pop("ceilings", None)
    return doc


def _compare(tmp_path, capsys, a, b):
    paths = []
    for name, doc in (("a", a), ("b", b)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        paths.append(str(path))
    assert main(["compare", *paths]) == 0
    return capsys.readouterr().out


def test_a_gap_inside_both_spreads_is_not_called_a_difference(tmp_path, capsys):
    base = json.loads((FIXTURES / "usb2_xhci.json").read_text())
    out = _compare(tmp_path, capsys, _scaled(base, 1.0, 0.06), _scaled(base, 0.95, 0.06))
    assert "within the repeats' spread" in out and "not a difference" in out
    assert "% below A" not in out


def test_a_gap_beyond_both_spreads_is_a_difference(tmp_path, capsys):
    base = json.loads((FIXTURES / "usb2_xhci.json").read_text())
    out = _compare(tmp_path, capsys, _scaled(base, 1.0, 0.005), _scaled(base, 0.95, 0.005))
    assert "5.0 % below A" in out and "not a difference" not in out


def test_the_table_shows_each_point_as_mean_plus_minus_half_its_range():
    point = {"direction": "in", "length": 512, "queue_depth": 1, "throughput": 2e6,
             "throughput_min": 1e6, "throughput_max": 4e6, "samples": [1e6, 2e6, 4e6],
             "errors": 0}
    mean, below, above = error_bar(point)
    assert (mean, below, above) == (7e6 / 3, 7e6 / 3 - 1e6, 4e6 - 7e6 / 3)
    assert point_spread(point) == 1.5e6
    table = format_table({"points": [point], "complete": True})
    assert "mean ± spread" in table and "2.33 ± 1.50" in table


def test_the_sweep_plot_draws_error_bars(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from busprobe import plot
    from matplotlib.axes import Axes

    drawn = []
    original = Axes.errorbar

    def errorbar(self, *args, **kwargs):
        drawn.append(kwargs["yerr"])
        return original(self, *args, **kwargs)

    Axes.errorbar = errorbar
    try:
        plot.plot_results([_scaled(json.loads((FIXTURES / "usb2_xhci.json").read_text()), 1,
                                   0.02)], tmp_path / "p.png")
    finally:
        Axes.errorbar = original
    assert drawn and all(min(low) > 0 and min(high) > 0 for low, high in drawn)
