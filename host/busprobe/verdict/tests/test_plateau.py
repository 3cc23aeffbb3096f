"""Plateau detection on clean, noisy, rising and unfinished curves."""

import random

import pytest
from busprobe.verdict import detect_plateau

LENGTHS = [512 << i for i in range(12)]  # 512 B .. 1 MiB


def saturating(length, top=50e6, half=8192):
    return top * length / (length + half)


def test_flat_curve_plateau_is_its_value_with_zero_spread():
    plateau = detect_plateau([(n, 40e6) for n in LENGTHS])
    assert plateau.value == 40e6 and plateau.spread == 0
    assert plateau.lengths == tuple(LENGTHS) and not plateau.rising and plateau.reached


def test_rising_part_is_excluded_and_plateau_starts_where_the_curve_flattens():
    curve = [(n, saturating(n, half=2048)) for n in LENGTHS]
    plateau = detect_plateau(curve)
    assert plateau.rising
    # Every accepted point is within 5 % of the top; the first excluded one is not.
    assert all(saturating(n, half=2048) >= 0.95 * 50e6 * 0.98 for n in plateau.lengths)
    below = max(n for n in LENGTHS if n < plateau.start)
    assert saturating(below, half=2048) < 0.95 * plateau.value
    assert plateau.value == pytest.approx(50e6, rel=0.03)


def test_noise_and_one_outlier_inside_the_plateau_do_not_cut_it_short():
    rng = random.Random(7)
    curve = [(n, 40e6 * (1 + rng.gauss(0, 0.01))) for n in LENGTHS]
    curve[-4] = (LENGTHS[-4], 30e6)  # one bad repeat in the middle of the plateau
    plateau = detect_plateau(curve)
    assert plateau.value == pytest.approx(40e6, rel=0.01)
    assert LENGTHS[-4] not in plateau.lengths and LENGTHS[-5] in plateau.lengths
    assert plateau.spread < 0.06


def test_noisy_longest_point_does_not_move_the_reference():
    curve = [(n, 40e6) for n in LENGTHS]
    curve[-1] = (LENGTHS[-1], 33e6)
    plateau = detect_plateau(curve)
    assert plateau.value == 40e6


def test_curve_still_climbing_at_the_end_is_marked_unreached():
    curve = [(n, saturating(n, half=1 << 22)) for n in LENGTHS]
    plateau = detect_plateau(curve)
    assert not plateau.reached
    assert plateau.value == pytest.approx(curve[-1][1])


def test_repeats_at_one_length_use_their_median():
    plateau = detect_plateau([(4096, 10e6), (4096, 11e6), (4096, 50e6)])
    assert plateau.value == 11e6


def test_empty_curve_has_no_plateau():
    assert detect_plateau([]) is None
    assert detect_plateau([(512, 0.0)]) is None
