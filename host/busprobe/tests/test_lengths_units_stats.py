"""Length/count parsing, display units and repeat statistics."""

import pytest
from busprobe.lengths import (
    default_lengths,
    format_size,
    parse_counts,
    parse_lengths,
    parse_size,
    power_ladder,
)
from busprobe.stats import median_or_none, summarise
from busprobe.units import Units


@pytest.mark.parametrize("text, value", [
    ("512", 512), ("4K", 4096), ("4k", 4096), ("1M", 1 << 20), ("2G", 2 << 30), (" 64K ", 65536),
    ("4KiB", 4096), ("100", 100),
])
def test_sizes_take_binary_suffixes(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "0", "-1", "4X", "K", "1.5K", "4 K B x"])
def test_bad_sizes_are_one_line_value_errors(text):
    with pytest.raises(ValueError, match="bad size") as info:
        parse_size(text)
    assert "\n" not in str(info.value)


def test_range_is_every_power_of_two_between_bounds():
    assert parse_lengths("512..4K") == [512, 1024, 2048, 4096]
    assert parse_lengths("512..4M")[-1] == 4 << 20
    assert len(parse_lengths("512..4M")) == 14


def test_explicit_lengths_may_be_any_size_and_mix_with_ranges():
    assert parse_lengths("100,512..1K,4K,100") == [100, 512, 1024, 4096]


@pytest.mark.parametrize("text, message", [
    ("500..4K", "not a power of two"), ("4K..512", "empty range"), ("512,,1K", "empty item"),
    ("512..", "bad size"),
])
def test_bad_length_lists_name_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        parse_lengths(text)


def test_counts_keep_order_and_reject_zero_and_words():
    assert parse_counts("1,4,8,4", "queue depth") == [1, 4, 8]
    with pytest.raises(ValueError, match="bad queue depth 0"):
        parse_counts("0", "queue depth")
    with pytest.raises(ValueError, match="bad queue depth 'x'"):
        parse_counts("4,x", "queue depth")


def test_default_ladders_follow_the_bus_kind_and_the_backends_limit():
    assert default_lengths("usb2-hs") == power_ladder(512, 4 << 20)
    assert default_lengths("pcie")[0] == 256
    assert default_lengths("usb2-hs", 64 << 10) == [512 << i for i in range(8)]
    assert default_lengths("usb2-hs", 100_000)[-1] == 65536  # rounded down to a power of two


def test_sizes_print_back_in_their_shortest_exact_form():
    assert [format_size(v) for v in (512, 4096, 1536, 1 << 20, 3 << 30)] == \
        ["512", "4K", "1536", "1M", "3G"]


def test_units_convert_and_always_carry_their_label():
    assert Units.parse("MiB") is Units.MIB
    assert Units.MB.format(53_248_000) == "53.25 MB/s"
    assert Units.MIB.format(1 << 20, 1) == "1.0 MiB/s"
    assert Units.MB.format(None) == "-"
    with pytest.raises(ValueError, match="unknown units"):
        Units.parse("gbit")


def test_summary_reports_median_extremes_and_relative_spread():
    s = summarise([10.0, 30.0, 20.0])
    assert (s.median, s.minimum, s.maximum, s.count) == (20.0, 10.0, 30.0, 3)
    assert s.spread == pytest.approx(1.0)
    assert summarise([5.0, 5.0, 5.0]).spread == 0.0
    assert summarise([1.0, 100.0, 2.0, 3.0]).median == 2.5  # an outlier does not move it much


def test_summary_of_nothing_is_an_error_and_missing_device_figures_are_none():
    with pytest.raises(ValueError):
        summarise([])
    assert median_or_none([None, None]) is None
    assert median_or_none([None, 4.0, 2.0]) == 3.0
