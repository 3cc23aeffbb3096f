"""The symbol streams between the soft endpoint's blocks: one packed 8b/10b symbol a clock."""

from amaranth.lib import data, stream

__all__ = ["TX_SYMBOL", "RX_SYMBOL", "tx_symbol_stream", "rx_symbol_stream"]

#: A symbol on its way to the SerDes. ``end`` marks the last symbol of a packet or an ordered
#: set, and every idle symbol: a SKP ordered set may follow it (and only it).
TX_SYMBOL = data.StructLayout({"symbol": 9, "end": 1})
#: A symbol from the SerDes. ``error``: the 8b/10b decoder saw a code or disparity error.
RX_SYMBOL = data.StructLayout({"symbol": 9, "error": 1})


def tx_symbol_stream() -> stream.Signature:
    return stream.Signature(TX_SYMBOL)


def rx_symbol_stream() -> stream.Signature:
    """Received symbols; ``valid`` low where a SKP ordered set was taken out. Never stalled."""
    return stream.Signature(RX_SYMBOL, always_ready=True)
