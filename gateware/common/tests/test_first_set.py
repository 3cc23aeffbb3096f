"""``first_set`` finds the lowest set bit of every vector, at widths that are and are not
powers of two (Amaranth simulation, exhaustive for small widths, random for 32)."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator
from busprobe.gateware.common.first_set import first_set


def _check(width: int, vectors: list[int]) -> None:
    m = Module()
    bits = Signal(width)
    found, index = first_set(m, bits)
    sim = Simulator(m)

    async def bench(ctx):
        for vector in vectors:
            ctx.set(bits, vector)
            lowest = (vector & -vector).bit_length() - 1
            assert ctx.get(found) == (vector != 0), (width, bin(vector))
            if vector:
                assert ctx.get(index) == lowest, (width, bin(vector))

    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("width", [1, 2, 3, 5, 8, 12])
def test_the_lowest_set_bit_of_every_vector_is_found(width):
    _check(width, list(range(1 << width)))


def test_the_lowest_set_bit_of_32_bit_vectors_is_found():
    rng = random.Random(32)
    vectors = [0, 1 << 31, (1 << 32) - 1] + [1 << i for i in range(32)]
    vectors += [rng.getrandbits(32) & rng.getrandbits(32) & rng.getrandbits(32)
                for _ in range(500)]
    _check(32, vectors)
