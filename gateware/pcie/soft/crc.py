"""A CRC register taking up to four bytes a clock: PCIe's LCRC and DLLP CRC (§3.5.2.1,
§3.6.2.1)."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["WordCrc", "reflected_step", "residue"]


def reflected_step(register: int, byte: int, *, width: int, poly: int) -> int:
    """One byte into a bit-reflected CRC register (data bit 0 first), without seed or complement.

    It is linear in ``(register, byte)`` over GF(2), which is what lets :class:`WordCrc` be a
    single XOR network. ``poly`` is the spec's polynomial (04C11DB7h, 100Bh), not reflected.
    """
    reflected = int(f"{poly:0{width}b}"[::-1], 2)
    for bit in range(8):
        if (register ^ (byte >> bit)) & 1:
            register = (register >> 1) ^ reflected
        else:
            register >>= 1
    return register


def residue(*, width: int, poly: int, seed: int, inverted: bool = False) -> int:
    """The register after a message and its own CRC (complemented, LSB first) went through it.

    The same for every message; with ``inverted`` the CRC was sent inverted (a nullified TLP).
    """
    register = seed
    for byte in b"busprobe":
        register = reflected_step(register, byte, width=width, poly=poly)
    crc = register ^ ((1 << width) - 1)
    if inverted:
        crc ^= (1 << width) - 1
    for byte in crc.to_bytes(width // 8, "little"):
        register = reflected_step(register, byte, width=width, poly=poly)
    return register


class WordCrc(wiring.Component):
    """A bit-reflected CRC over a stream of words of up to ``lanes`` bytes a clock: the LCRC and
    DLLP CRC of a link that moves several symbols a clock.

    One XOR network per byte count (a CRC is linear, so ``n`` bytes at once are ``n``
    :func:`reflected_step` applied to unit vectors, folded into one matrix); ``count`` picks one.

    Attributes
    ----------
    restart: Signal(), input
        Start from the seed this clock: with ``count`` bytes, the register after this clock holds
        the CRC of just them.
    count: Signal(range(lanes + 1)), input
        How many bytes of ``data`` to take this clock, from byte 0 (0: none).
    data: Signal(8 * lanes), input
        Byte 0 in bits 7:0, taken first.
    register: Signal(width), output
        The register (what to send is its complement, byte 0 in bits 7:0 first).
    next: Signal(width), output
        The register after this clock's bytes (compare it with :func:`residue` when the
        message's last bytes are in this word).

    Parameters
    ----------
    width: int
        32 for the LCRC, 16 for the DLLP CRC.
    poly: int
        The spec's polynomial.
    seed: int
        All ones for both PCIe CRCs (the default).
    lanes: int
        Bytes a word.
    """

    def __init__(self, *, width: int, poly: int, lanes: int = 4, seed: int | None = None):
        self._width, self._poly, self._lanes = width, poly, lanes
        self._seed = (1 << width) - 1 if seed is None else seed
        super().__init__({"restart": In(1), "count": In(range(lanes + 1)),
                          "data": In(8 * lanes), "register": Out(width, init=self._seed),
                          "next": Out(width)})

    def _step(self, register: int, data: bytes) -> int:
        for byte in data:
            register = reflected_step(register, byte, width=self._width, poly=self._poly)
        return register

    def elaborate(self, platform):
        m = Module()
        width = self._width
        start = Signal(width)
        m.d.comb += start.eq(Mux(self.restart, self._seed, self.register))
        outcomes = [start]
        for n in range(1, self._lanes + 1):
            from_register = [self._step(1 << j, bytes(n)) for j in range(width)]
            from_data = [self._step(0, (1 << k).to_bytes(n, "little")) for k in range(8 * n)]
            result = Signal(width, name=f"after_{n}")
            for i in range(width):
                terms = [start[j] for j in range(width) if from_register[j] >> i & 1]
                terms += [self.data[k] for k in range(8 * n) if from_data[k] >> i & 1]
                m.d.comb += result[i].eq(Cat(*terms).xor())
            outcomes.append(result)
        with m.Switch(self.count):
            for n, outcome in enumerate(outcomes):
                with m.Case(n):
                    m.d.comb += self.next.eq(outcome)
        m.d.sync += self.register.eq(self.next)
        return m
