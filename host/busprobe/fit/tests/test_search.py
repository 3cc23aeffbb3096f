"""The compass search on the kinds of function the fit gives it: valleys and staircases."""

import math

from busprobe.fit.search import compass_search


def test_finds_the_bottom_of_a_bowl_and_the_floor_of_a_diagonal_valley():
    def bowl(x):
        return (x[0] - 20.0) ** 2 + 3 * (x[1] - 30.0) ** 2

    found = compass_search(bowl, [1.0, 90.0], steps=[10.0, 10.0], tolerances=[1e-3, 1e-3],
                           lower=[0.0, 0.0], upper=[100.0, 100.0])
    assert math.isclose(found.x[0], 20.0, abs_tol=0.01)
    assert math.isclose(found.x[1], 30.0, abs_tol=0.01)

    # Two latencies at queue depth 1: only their sum is sharp. Steps along the axes reach the
    # floor of the valley but not its lowest point along it (why the fit searches along the
    # sum and the share instead, busprobe.fit.parameters).
    def valley(x):
        return (x[0] + x[1] - 50.0) ** 2 + 1e-3 * (x[0] - 20.0) ** 2

    found = compass_search(valley, [1.0, 1.0], steps=[10.0, 10.0], tolerances=[1e-3, 1e-3],
                           lower=[0.0, 0.0], upper=[100.0, 100.0])
    assert math.isclose(found.x[0] + found.x[1], 50.0, abs_tol=0.1)


def test_stays_inside_the_bounds_and_stops_on_a_staircase():
    def stairs(x):
        return float(math.floor(abs(x[0] - 7.3)))  # flat steps, no slope to follow

    found = compass_search(stairs, [40.0], steps=[8.0], tolerances=[0.01], lower=[0.0],
                           upper=[50.0])
    assert 0.0 <= found.x[0] <= 50.0
    assert found.value == 0.0  # on the bottom step
    below = compass_search(lambda x: x[0], [5.0], steps=[3.0], tolerances=[0.01], lower=[2.0],
                           upper=[9.0])
    assert below.x == (2.0,)


def test_evaluations_are_bounded():
    calls = []

    def counted(x):
        calls.append(x)
        return math.sin(x[0] * 37.0)

    found = compass_search(counted, [0.3], steps=[1.0], tolerances=[1e-12], lower=[-1.0],
                           upper=[1.0], max_evaluations=25)
    assert found.evaluations == len(calls) <= 26
