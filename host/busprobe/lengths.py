"""Transfer lengths and count lists as the user types them: ``512,4096``, ``4K``, ``512..4M``.

Suffixes are binary (``K`` = 1024, ``M`` = 1024², ``G`` = 1024³); a range ``A..B`` is every power of
two from ``A`` to ``B``; explicitly listed values may be any positive size (USB short transfers
included). Every parse error is a one-line :class:`ValueError` naming the bad item.
"""

from __future__ import annotations

import re

from . import buses

__all__ = [
    "parse_size", "parse_lengths", "parse_counts", "format_size", "power_ladder",
    "DEFAULT_MAX_LENGTH", "default_lengths",
]

_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)(?:I?B)?\s*$", re.IGNORECASE)

#: Longest length of the default ladder on hardware (a backend may lower it, see
#: :attr:`busprobe.transport.Transport.default_max_length`).
DEFAULT_MAX_LENGTH = 4 << 20


def parse_size(text: str) -> int:
    """``"4K"`` → 4096. Raises :class:`ValueError` for anything but a positive size."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"bad size {text!r}: expected a number with an optional K/M/G suffix")
    value = int(match[1]) * _SUFFIX[match[2].upper()]
    if value <= 0:
        raise ValueError(f"bad size {text!r}: must be positive")
    return value


def format_size(value: int) -> str:
    """Shortest exact spelling: 4096 → ``"4K"``, 1536 → ``"1536"``."""
    for suffix in ("G", "M", "K"):
        unit = _SUFFIX[suffix]
        if value >= unit and value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(value)


def power_ladder(low: int, high: int) -> list[int]:
    """Every power of two from ``low`` to ``high`` (both must be powers of two, ``low <= high``)."""
    for value in (low, high):
        if value & (value - 1):
            raise ValueError(f"range bound {format_size(value)} is not a power of two")
    if low > high:
        raise ValueError(f"empty range {format_size(low)}..{format_size(high)}")
    ladder = []
    while low <= high:
        ladder.append(low)
        low *= 2
    return ladder


def parse_lengths(text: str) -> list[int]:
    """``"512,4K"`` or ``"512..4M"`` or a mix (``"100,512..2K"``): sorted, without duplicates."""
    lengths: set[int] = set()
    for item in text.split(","):
        if not item.strip():
            raise ValueError(f"bad length list {text!r}: empty item")
        low, sep, high = item.partition("..")
        if sep:
            lengths.update(power_ladder(parse_size(low), parse_size(high)))
        else:
            lengths.add(parse_size(item))
    return sorted(lengths)


def parse_counts(text: str, what: str) -> list[int]:
    """A comma list of positive integers (queue depths, MPS values), in the order given."""
    values: list[int] = []
    for item in text.split(","):
        try:
            value = int(item.strip())
        except ValueError:
            raise ValueError(f"bad {what} {item.strip()!r}: expected a positive integer") from None
        if value < 1:
            raise ValueError(f"bad {what} {value}: must be at least 1")
        if value not in values:
            values.append(value)
    return values


def default_lengths(bus_kind: str, max_length: int = DEFAULT_MAX_LENGTH) -> list[int]:
    """The ladder swept when ``--lengths`` is not given: powers of two from the bus's
    :attr:`~busprobe.buses.Bus.default_min_length` up to ``max_length``."""
    low = buses.by_kind(bus_kind).default_min_length
    return power_ladder(low, max(low, 1 << (max_length.bit_length() - 1)))
