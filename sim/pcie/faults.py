"""A hostile root complex: faulty completions and stray TLPs among the real traffic, seeded.

:class:`FaultInjector` sits where the simulated link hands TLPs to the core
(:attr:`TlpStreamEndpoint.rx_filter <busprobe.sim.pcie.tlp_stream.TlpStreamEndpoint>`): the
root complex (cocotbext-pcie, with :class:`~busprobe.sim.pcie.chipset.ChipsetRootComplex`)
answers every read correctly, and the injector turns some of its completions into faulty ones
and adds stray packets, with a :class:`random.Random` of a given seed. Every packet the core gets
goes through :class:`~busprobe.sim.pcie.guard_model.GuardModel`, which says what the core must
count; :attr:`injected` says what was done.

Faults that replace a real completion (the read it belongs to fails: :data:`FATAL`):

``poisoned``        EP set, payload corrupted (a core that used it would show pattern errors)
``status_ur``       a Cpl with status Unsupported Request instead
``status_ca``       a Cpl with status Completer Abort instead
``byte_count``      Byte Count not what the read still expects
``lower_address``   Lower Address not where the data starts
``length``          payload a few DWs longer or shorter than the header's other fields allow
``truncated``       1 to 3 DWs short of its Length (raw beats)
``overlong``        1 to 3 DWs more than its Length (raw beats)
``dropped``         never delivered (the read times out)

Stray packets next to a real completion, which harm no read (:data:`STRAY`):

``unknown_tag``     a copy with a tag the core never uses
``wrong_requester`` a copy addressed to another function
``locked``          a copy as a completion for a locked read
``fragment``        a header's first beat alone (raw beats)
``unsolicited``     a completion for a tag the core is not waiting on (only while no read runs:
                    a tag the core is about to use would make the outcome a race)
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable

from cocotbext.pcie.core.tlp import CplStatus, Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId

from .guard_model import GuardModel, packet_beats
from .tlp_stream import RawPacket

__all__ = ["FaultInjector", "FATAL", "STRAY", "completion_for"]

FATAL = ("poisoned", "status_ur", "status_ca", "byte_count", "lower_address", "length",
         "truncated", "overlong", "dropped")
STRAY = ("unknown_tag", "wrong_requester", "locked", "fragment")
_COMPLETIONS = {TlpType.CPL, TlpType.CPL_DATA}


def completion_for(requester_id: int, tag: int, data: bytes, *, lower: int = 0,
                   byte_count: int | None = None) -> Tlp:
    """A successful completion (CplD, or Cpl when ``data`` is empty) of ``tag``."""
    tlp = Tlp()
    tlp.fmt_type = TlpType.CPL_DATA if data else TlpType.CPL
    tlp.requester_id = PcieId.from_int(requester_id)
    tlp.tag = tag
    tlp.lower_address = lower & 0x7F
    tlp.byte_count = (len(data) if byte_count is None else byte_count) & 0xFFF
    if data:
        tlp.set_data(data)
    return tlp


def _dws(beats: list[tuple[int, int]]) -> list[int]:
    return [w for dat, be in beats for w in ([dat & 0xFFFF_FFFF] + ([dat >> 32] if be & 0xF0
                                                                       else []))]


def _beats(dws: list[int]) -> list[tuple[int, int]]:
    pairs = [dws[i:i + 2] for i in range(0, len(dws), 2)]
    return [(p[0] | (p[1] << 32 if len(p) == 2 else 0), 0xFF if len(p) == 2 else 0x0F)
            for p in pairs]


class FaultInjector:
    """Turns real completions into faults and adds strays, with probabilities per packet.

    Parameters
    ----------
    model : GuardModel
        Told about every read the core sends and every packet it gets.
    seed : int
    fault_rate : float
        Chance that a real completion is replaced by a fault of :attr:`fatal`.
    stray_rate : float
        Chance that a stray packet of :attr:`stray` goes next to a real completion.

    Attributes
    ----------
    fatal, stray : tuple of str
        The fault kinds drawn from (change between rounds to direct them).
    injected : Counter
        Faults and strays done, by kind.
    answered : bool
        Every read the core sent has had its last completion from the root (faulty or not).
    requests : int
        Memory reads the core has sent.
    completions : int
        Real completions seen (faulty or not); :meth:`plan` counts in these.
    """

    def __init__(self, model: GuardModel, seed: int, *, fault_rate: float = 0.0,
                 stray_rate: float = 0.0) -> None:
        self.model = model
        self.rng = random.Random(seed)
        self.fault_rate = fault_rate
        self.stray_rate = stray_rate
        self.fatal: tuple[str, ...] = FATAL
        self.stray: tuple[str, ...] = STRAY
        self.injected: Counter[str] = Counter()
        self._owed: set[int] = set()  # tags of reads the root has not finished answering
        self._planned: dict[int, str] = {}
        self.requests = 0
        self.completions = 0

    def plan(self, kind: str, at: int) -> None:
        """Make real completion number ``at`` (from 0, see :attr:`completions`) the fault or
        carry the stray ``kind`` instead of drawing at random."""
        if kind not in FATAL + STRAY:
            raise ValueError(f"no fault {kind!r}")
        self._planned[at] = kind

    def attach(self, endpoint) -> None:
        """Filter ``endpoint``'s receive stream and watch what it sends (keeps its callback)."""
        sent = endpoint.on_tx_tlp

        def on_tx(tlp: Tlp) -> None:
            if sent is not None:
                sent(tlp)
            self.model.request(tlp)
            if tlp.fmt_type in {TlpType.MEM_READ, TlpType.MEM_READ_64}:
                self._owed.add(tlp.tag)
                self.requests += 1

        endpoint.on_tx_tlp = on_tx
        endpoint.rx_filter = self.filter

    @property
    def answered(self) -> bool:
        return not self._owed

    def deliver(self, items: Iterable[Tlp | RawPacket]) -> list[Tlp | RawPacket]:
        """``items`` as the core will get them, each classified by the model on the way."""
        items = list(items)
        for item in items:
            self.model.receive(item)
        return items

    def filter(self, tlp: Tlp) -> list[Tlp | RawPacket]:
        if tlp.fmt_type not in _COMPLETIONS:
            return self.deliver([tlp])
        # The root's last completion of a read carries the bytes its Byte Count says are left.
        if tlp.status != CplStatus.SC or tlp.byte_count == tlp.length * 4:
            self._owed.discard(tlp.tag)
        planned = self._planned.pop(self.completions, None)
        self.completions += 1
        out: list[Tlp | RawPacket] = [tlp]
        if planned in FATAL or planned is None and self.rng.random() < self.fault_rate:
            kind = planned or self.rng.choice(self.fatal)
            self.injected[kind] += 1
            out = self._fault(kind, tlp)
        if planned in STRAY or planned is None and self.rng.random() < self.stray_rate:
            kind = planned or self.rng.choice(self.stray)
            self.injected[kind] += 1
            stray = self._stray(kind, tlp)
            out = [stray, *out] if self.rng.random() < 0.5 else [*out, stray]
        return self.deliver(out)

    def unsolicited(self, tag: int) -> Tlp:
        """A completion nobody asked for (inject it while no read runs)."""
        self.injected["unsolicited"] += 1
        return self._nobody_asked_for(tag)

    def idle_stray(self) -> Tlp | RawPacket:
        """A stray for a moment no read runs: a completion nobody asked for, with any tag, or
        the first beat of one alone."""
        tag = self.rng.randrange(256)
        if self.rng.random() < 0.3:
            self.injected["fragment"] += 1
            return RawPacket(packet_beats(self._nobody_asked_for(tag))[:1])
        return self.unsolicited(tag)

    def _nobody_asked_for(self, tag: int) -> Tlp:
        size = self.rng.choice((0, 4, 64, 128))
        return completion_for(self.model.requester_id, tag, self.rng.randbytes(size),
                              lower=self.rng.randrange(0, 128, 4))

    # -- the faults ------------------------------------------------------------------------------

    def _fault(self, kind: str, tlp: Tlp) -> list[Tlp | RawPacket]:
        rng = self.rng
        if kind == "dropped":
            return []
        if kind in ("truncated", "overlong"):
            dws = _dws(packet_beats(tlp))
            n = min(rng.randint(1, 3), tlp.length) if kind == "truncated" else rng.randint(1, 3)
            dws = dws[:-n] if kind == "truncated" else dws + [rng.getrandbits(32)
                                                              for _ in range(n)]
            return [RawPacket(_beats(dws))]
        bad = Tlp(tlp)
        if kind == "poisoned":
            bad.ep = True
            bad.data = bytearray(b ^ 0xA5 for b in bad.data)
        elif kind in ("status_ur", "status_ca"):
            bad.fmt_type = TlpType.CPL
            bad.data = bytearray()
            bad.length = 0
            bad.status = CplStatus.UR if kind == "status_ur" else CplStatus.CA
        elif kind == "byte_count":
            bad.byte_count = (bad.byte_count + 4 * rng.randint(1, 64)) & 0xFFF
        elif kind == "lower_address":
            bad.lower_address ^= 4 * rng.randint(1, 31)
        elif kind == "length":
            # Fewer than 16 DWs either way: the payload no longer ends on a 64-byte RCB
            # boundary, nor (longer) where the read ends, so it is never a legal split.
            # Longer only within MPS (else it is malformed, another class) and never exactly
            # what the read still expects (that would be a legal completion of wrong data).
            read = self.model.reads.get(tlp.tag)
            room = self.model.max_payload_size // 4 - bad.length
            n = rng.choice([k for k in range(-15, min(room, 15) + 1) if k and 0 < bad.length + k
                            and not (read is not None and 4 * (bad.length + k) == read.remaining
                                     and k > 0)])
            data = bytes(bad.data)
            bad.set_data(data[:4 * (bad.length + n)] if n < 0 else data + bytes(4 * n))
        return [bad]

    def _stray(self, kind: str, tlp: Tlp) -> Tlp | RawPacket:
        rng = self.rng
        copy = Tlp(tlp)
        if kind == "unknown_tag":
            copy.tag = rng.randint(8, 255)
        elif kind == "wrong_requester":
            own = PcieId(tlp.requester_id)
            copy.requester_id = own._replace(bus=(own.bus + rng.randint(1, 255)) % 256)
        elif kind == "locked":
            copy.fmt_type = (TlpType.CPL_LOCKED_DATA if tlp.fmt_type == TlpType.CPL_DATA
                             else TlpType.CPL_LOCKED)
        elif kind == "fragment":
            return RawPacket(packet_beats(tlp)[:1])
        return copy
