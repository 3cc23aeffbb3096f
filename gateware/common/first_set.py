"""The lowest set bit of a vector, found by a balanced tree rather than a priority chain.

Amaranth's ``with m.If`` ladder over N bits elaborates to a chain of N multiplexers; synthesis
does not always rebalance it, and over the UAS task set's 32 slots it was the ECPIX-5's worst
``ss`` path. A tree of pairs takes log2(N) levels: each node is found in a half, or in the other
half with the half's width added to its index.
"""

from amaranth import Const, Module, Mux, Signal, Value

__all__ = ["first_set"]


def first_set(m: Module, bits: Value, *, name: str = "first") -> tuple[Signal, Signal]:
    """``(any, index)``: whether any bit of ``bits`` is set, and the lowest one's index.

    ``index`` means nothing when no bit is set (a user looks at ``any`` first: one level
    fewer than forcing it to 0). The signals are combinational, added to ``m.d.comb``.

    Parameters
    ----------
    m: the module the tree is built in.
    bits: the vector searched (bit 0 is the lowest).
    name: the prefix of the tree's signals.
    """
    width = len(bits)
    index_width = max(1, (width - 1).bit_length())

    def node(low: int, size: int, level: int) -> tuple[Value, Value]:
        if size == 1:
            return bits[low], Const(0, index_width)
        half = 1 << ((size - 1).bit_length() - 1)  # the largest power of two below size
        lo_any, lo_index = node(low, half, level + 1)
        hi_any, hi_index = node(low + half, size - half, level + 1)
        found = Signal(name=f"{name}_{level}_{low}_any")
        index = Signal(index_width, name=f"{name}_{level}_{low}_index")
        m.d.comb += [found.eq(lo_any | hi_any),
                     # hi_index < half, a power of two: its index here is an OR, no carry.
                     index.eq(Mux(lo_any, lo_index, hi_index | half))]
        return found, index

    found, index = node(0, width, 0)
    any_, out = Signal(name=f"{name}_any"), Signal(index_width, name=f"{name}_index")
    m.d.comb += [any_.eq(found), out.eq(index)]
    return any_, out
