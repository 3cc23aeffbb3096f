"""Plateau detection: the longest lengths whose figures agree within the repeats' own spread or
1 %, where it starts, and "not reached" when no two longest lengths agree."""

import random

import pytest
from busprobe.verdict import detect_plateau
from busprobe.verdict.plateau import MAX_TOLERANCE

LENGTHS = [512 << i for i in range(12)]  # 512 B .. 1 MiB
MB = 1e6


def saturating(length, top=50e6, half=8192):
    return top * length / (length + half)


def test_the_demo_xhci_ladder_is_flat_from_128k_not_a_4_5_percent_plateau_from_32k():
    # make demo, xHCI port, OUT at queue depth 1 (MB/s): the 32K point is 4.5 % below the rest.
    curve = [(512, 8.13 * MB), (2048, 23.07 * MB), (8192, 37.41 * MB), (32768, 46.75 * MB),
             (131072, 48.76 * MB), (262144, 48.94 * MB)]
    plateau = detect_plateau(curve)
    assert plateau.reached and plateau.lengths == (131072, 262144) and plateau.start == 131072
    assert plateau.spread < 0.01 and plateau.value == pytest.approx(48.85 * MB)


def test_flat_curve_plateau_is_its_value_with_zero_spread():
    plateau = detect_plateau([(n, 40e6) for n in LENGTHS])
    assert plateau.value == 40e6 and plateau.spread == 0
    assert plateau.lengths == tuple(LENGTHS) and not plateau.rising and plateau.reached


def test_rising_part_is_excluded_and_every_plateau_point_is_within_one_percent():
    curve = [(n, saturating(n, half=2048)) for n in LENGTHS]
    plateau = detect_plateau(curve)
    assert plateau.reached and plateau.rising and plateau.spread <= 0.01
    values = [saturating(n, half=2048) for n in plateau.lengths]
    assert (max(values) - min(values)) / plateau.value <= 0.01
    below = max(n for n in LENGTHS if n < plateau.start)
    assert (max(values) - saturating(below, half=2048)) / plateau.value > 0.01


def test_the_repeats_own_spread_widens_the_band_beyond_one_percent():
    rng = random.Random(7)
    noisy = [(n, 40e6 * (1 + rng.uniform(-0.015, 0.015)), 0.04) for n in LENGTHS]
    plateau = detect_plateau(noisy)
    assert plateau.reached and plateau.band == pytest.approx(0.04)
    assert plateau.lengths == tuple(LENGTHS)
    # The same figures from repeats that agree to 0.1 % are not one plateau.
    quiet = [(n, v, 0.001) for n, v, _ in noisy]
    assert detect_plateau(quiet).lengths != tuple(LENGTHS)


def test_curve_still_climbing_at_the_end_is_not_reached_and_gives_the_longest_figure():
    curve = [(n, saturating(n, half=1 << 22)) for n in LENGTHS]
    plateau = detect_plateau(curve)
    assert not plateau.reached and plateau.why == "rising"
    assert plateau.value == pytest.approx(curve[-1][1]) and plateau.lengths == (LENGTHS[-1],)


def test_a_drop_at_the_longest_length_is_not_reached_either():
    curve = [(n, 40e6) for n in LENGTHS]
    curve[-1] = (LENGTHS[-1], 33e6)
    plateau = detect_plateau(curve)
    assert not plateau.reached and plateau.why == "falling" and plateau.value == 33e6


def test_one_length_is_no_plateau():
    plateau = detect_plateau([(4096, 10e6), (4096, 11e6), (4096, 50e6)])
    assert plateau.value == 11e6 and not plateau.reached and plateau.why == "one length"


def test_a_tolerance_above_one_percent_is_refused():
    with pytest.raises(ValueError, match="not within"):
        detect_plateau([(512, 1.0)], tolerance=MAX_TOLERANCE * 2)


def test_empty_curve_has_no_plateau():
    assert detect_plateau([]) is None
    assert detect_plateau([(512, 0.0)]) is None
