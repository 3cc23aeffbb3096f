"""The symbol streams between the soft endpoint's blocks: words of several symbols (the link at
four symbols a clock, DESIGN §3.10), lane 0 first on the wire."""

from amaranth.lib import data, stream

__all__ = ["RX_SYMBOL", "LANES", "rx_word_layout", "tx_word_layout", "rx_word_stream",
           "tx_word_stream"]

#: A symbol from the SerDes. ``error``: the 8b/10b decoder saw a code or disparity error.
RX_SYMBOL = data.StructLayout({"symbol": 9, "error": 1})
#: Symbols a word on the link at four symbols a clock.
LANES = 4


def rx_word_layout(width: int = LANES) -> data.ArrayLayout:
    """``width`` received symbols, lane 0 first (each :data:`RX_SYMBOL`)."""
    return data.ArrayLayout(RX_SYMBOL, width)


def tx_word_layout(width: int = LANES) -> data.StructLayout:
    """``width`` symbols to send, lane 0 first; ``end``: the word ends a packet or an ordered
    set, or is logical idle, so a SKP ordered set may follow it (every structure is whole
    words, so none is ever split)."""
    return data.StructLayout({"symbols": data.ArrayLayout(9, width), "end": 1})


def rx_word_stream(width: int = LANES) -> stream.Signature:
    """Received words (never stalled; ``valid`` per word)."""
    return stream.Signature(rx_word_layout(width), always_ready=True)


def tx_word_stream(width: int = LANES) -> stream.Signature:
    return stream.Signature(tx_word_layout(width))
