"""Decoding a SETUP packet's fields, shared by the USB 2.0 and SuperSpeed request handlers."""

from amaranth import Cat, Const

__all__ = ["index_is"]


def index_is(index, *values):
    """``index == value`` for each of ``values`` (the wIndex values a device has: endpoint
    addresses, interface numbers), written so the compares share one test of the bits every
    value has 0 in (a 16-bit compare per value maps to a tree of LUTs each)."""
    used = 0
    for value in values:
        used |= value
    bits = [bit for bit in range(len(index)) if used >> bit & 1]
    rest_zero = (index & ~used & ((1 << len(index)) - 1)) == 0
    return [rest_zero & (Cat(index[bit] for bit in bits)
                         == Cat(Const(value >> bit & 1, 1) for bit in bits))
            for value in values]
