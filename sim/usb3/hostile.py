"""A hostile SuperSpeed link: wire faults among valid bulk traffic, each checked by an oracle.

:class:`HostileHost` drives the device through the same PIPE partner, link layer and xHCI
model as the well-behaved host (:func:`hostile_session` swaps in the two hooks of
:mod:`.hostile_link`, nothing else), and between faults it moves valid bulk IN and OUT
transfers of the PRBS31 pattern. Each fault is one of :data:`FAULTS`, chosen with its position
(which header of the carrying transfer, which bit) by a seeded generator:

``header_crc16``, ``control_word_crc5``, ``header_symbol``
    A header packet from the host with a wrong CRC-16, a bit of its link control word's CRC-5
    flipped, or any one bit of its 16 bytes flipped (a corrupted symbol). The device must answer
    exactly one LBAD; the host sends LRTY and every unacknowledged header again (USB 3.2
    §7.2.4.1.4-.5).
``dpp_crc32``, ``payload_symbol``
    An OUT data packet payload with a wrong CRC-32 or one payload bit flipped: the device drops
    it, counts it (``out_bad_dps``) and asks for it again with Rty (§8.10.2).
``device_header_crc``, ``device_dpp_crc32``
    The device's ACK TP or IN data payload taken as arriving broken: the host answers LBAD and
    the device must send exactly one LRTY and the header again; or the host asks for the DP again
    with Rty and the device counts exactly one retry (``in_retries``).
``lost_lgood``, ``lost_lcrd``
    A link command the host owes the device is dropped on the wire. The device must notice at
    the next LGOOD / LCRD (out of order) and go to Recovery (§7.2.4.1.3, .1.7), exactly once;
    the host follows it through Recovery (:mod:`.recovery`) and the link advertisement.
``u0_recovery``
    The host leaves U0 for Recovery; the device must follow and come back, having lost no header.
``device_dp_header_crc``
    The header of the device's last IN DP of a transfer taken as arriving broken: the host
    answers LBAD; the device must send exactly one LRTY and the header again. LUNA nullifies
    the resent header's payload, so one Rty follows and the endpoint sends the DP again.
``header_framing``, ``device_lgood_crc5``, ``device_lcrd_crc5``
    On an idle link (:mod:`.hostile_idle`): a header whose framing (HPSTART) is lost, so the
    device sees the next one's sequence number out of order and goes to Recovery; a device
    LGOOD / LCRD with a broken CRC-5, so the host sees the next one out of order and goes to
    Recovery. Each exactly one Recovery, the device's advertisement as predicted.
``mid_transfer_recovery``
    Recovery between two DPs of an OUT transfer, every header before it acknowledged both ways:
    the device follows once, the transfer completes with nothing sent again.

After every fault the device must be in U0 and its next transfer must run; at the end every
byte the device took and sent is checked against the pattern and its counters against the
oracle's sums (:meth:`HostileHost.finish`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from busprobe.protocol import usb3 as contract
from busprobe.protocol.names import Direction
from busprobe.protocol.patterns import Pattern, PatternStream

from .controller import ITP_INTERVAL_CYCLES
from .framing import HEADER_SYMBOLS, LinkCommand
from .hostile_idle import RECOVERY_NOTICE_CYCLES, SETTLE_CYCLES, IdleLinkFaults
from .hostile_link import HostileLink, HostilePartner, hostile_session
from .pipe import TS1
from .recovery import device_in_recovery
from .session import Usb3Session

__all__ = ["HostileHost", "HostileTally", "OracleMismatch", "FAULTS", "hostile_session"]

EP_IN, EP_OUT = contract.EP_IN & 0x7F, contract.EP_OUT
MPS = contract.MAX_PACKET_SIZE
#: A one-packet OUT transfer starting this long before an ITP boundary ends before it (the
#: controller sends an ITP at the first chance after each boundary).
ITP_CLEARANCE_CYCLES = 2_000


class OracleMismatch(AssertionError):
    """The device did not answer a fault as the oracle predicts."""


@dataclass
class HostileTally:
    """What a hostile run did and saw, for the test to compare with the device's telemetry.

    Attributes
    ----------
    faults : Counter
        Faults injected, by name (:data:`FAULTS`).
    observed : Counter
        What each fault's oracle checked, summed: ``lbad`` (LBADs the device sent), ``lrty``
        (LRTYs it sent), ``recovery`` (times it went to Recovery), ``host_rty`` (ACK TPs with
        Rty the host sent), ``lost_headers`` (headers the host sent again after Recovery).
    expected_telemetry : Counter
        Device counters the faults must have moved: ``out_bad_dps``, and ``in_dps_resent``
        (``in_dps_sent`` - ``in_packets``).
    transfers : int
        Valid bulk transfers moved.
    repeated_recoveries : int
        Recoveries the host had to start again because the device did not advertise (LUNA's
        receiver, before gateware/usb3/link_commands.py's work-around; every fault's oracle
        expects 0).
    out_bytes, in_bytes : int
        Payload the host sent and received in them.
    in_errors : int
        IN words that differed from the pattern (must stay 0).
    """

    faults: Counter = field(default_factory=Counter)
    observed: Counter = field(default_factory=Counter)
    expected_telemetry: Counter = field(default_factory=Counter)
    transfers: int = 0
    repeated_recoveries: int = 0
    out_bytes: int = 0
    in_bytes: int = 0
    in_errors: int = 0


class HostileHost(IdleLinkFaults):
    """Faults and valid bulk traffic on one enumerated hostile session (module docstring).

    Parameters
    ----------
    session : Usb3Session
        From :func:`hostile_session`, powered up.
    seed : int
        Seed of the fault sequence (a failure reproduces from it and the fault's index).
    """

    Mismatch = OracleMismatch

    def __init__(self, session: Usb3Session, seed: int) -> None:
        self.session = session
        self.partner: HostilePartner = session.partner
        self.link: HostileLink = session.link
        self.rng = random.Random(seed)
        self.out_source = PatternStream(Pattern.PRBS31)
        self.in_expected = PatternStream(Pattern.PRBS31)
        self.tally = HostileTally()
        self.index = 0

    async def prepare(self) -> None:
        """Pattern PRBS31 both ways, counters cleared, the IN source endless."""
        control = self.session.protocol.control
        await control(0x40, contract.Request.SET_PATTERN, int(Pattern.PRBS31), 0, 0)
        await control(0x40, contract.Request.CLEAR_TELEMETRY, 0, 0, 0)
        await control(0x40, contract.Request.SET_IN_TRANSFER, *contract.encode_in_transfer(0), 0)

    # -- valid traffic ---------------------------------------------------------------------

    async def transfer(self, direction: str, packets: int) -> None:
        """One bulk transfer of ``packets`` full packets; IN data checked against the pattern."""
        host, length = self.session.host, packets * MPS
        if direction == Direction.OUT:
            outcome = await host.stream("out", EP_OUT, length, 1, 1, source=self.out_source.take)
            self.tally.out_bytes += outcome.bytes
        else:
            chunks: list[bytes] = []
            outcome = await host.stream("in", EP_IN, length, 1, 1, sink=chunks.append)
            for chunk in chunks:
                self.tally.in_errors += self.in_expected.check(chunk).errors
                self.tally.in_bytes += len(chunk)
        if outcome.bytes != length:
            raise OracleMismatch(f"fault {self.index}: {direction} transfer moved "
                                 f"{outcome.bytes} of {length} bytes")
        self.tally.transfers += 1

    def _snapshot(self) -> dict[str, int]:
        counters, partner = self.link.counters, self.partner
        self.tally.repeated_recoveries = self.link.repeated_recoveries
        return {"lbad": counters.lbad_received, "lrty": counters.lrty_received,
                "recovery": partner.received_sets(TS1)[1],
                "host_rty": self.session.host.counters["retries"],
                "lost_headers": self.link.resent_after_recovery,
                "repeated_recoveries": self.link.repeated_recoveries,
                "bad_commands": counters.bad_commands}

    async def _check(self, name: str, before: dict[str, int], expect: dict[str, int],
                     free: tuple[str, ...] = ()) -> None:
        """Compare what the link saw since ``before`` with ``expect`` (0 where not named),
        after :data:`SETTLE_CYCLES`; ``free`` names observables the fault may move freely."""
        await self.partner.wait_cycles(SETTLE_CYCLES)
        after = self._snapshot()
        seen = {key: after[key] - before[key] for key in ("lbad", "lrty", "host_rty",
                                                          "lost_headers", "repeated_recoveries",
                                                          "bad_commands")}
        seen["recovery"] = int(after["recovery"] > before["recovery"])
        wanted = {key: expect.get(key, 0) for key in seen}
        for key in free:
            wanted[key] = seen[key]
        if seen != wanted:
            raise OracleMismatch(f"fault {self.index} ({name}): the oracle predicts {wanted}, "
                                 f"the link saw {seen}")
        self.tally.observed.update({key: seen[key] for key in seen if key not in free})

    # -- faults ----------------------------------------------------------------------------

    def _flip(self, block: bytearray, first: int, last: int) -> None:
        bit = self.rng.randrange(8 * first, 8 * last)
        block[bit // 8] ^= 1 << bit % 8

    def _carrier(self) -> tuple[str, int, int]:
        """A carrying transfer (direction, packets) and the host header in it to hit: any of
        an IN transfer's ACK TPs (and ITPs), an OUT transfer's last DP. (Not an earlier DP: LUNA
        takes the DPs behind a bad header before the LRTY, see
        :meth:`lbad_window_dps_reach_the_endpoint`.)"""
        direction, packets = self.rng.choice(("in", "out")), self.rng.randint(1, 4)
        return direction, packets, self.rng.randrange(packets) if direction == Direction.IN \
            else packets - 1

    async def _header_fault(self, name: str, mutate: Callable[[bytearray], None]) -> None:
        direction, packets, skip = self._carrier()
        before = self._snapshot()
        self.partner.corrupt_header(skip, mutate, with_payload=direction == Direction.OUT)
        await self.transfer(direction, packets)
        if self.partner.corruption_pending:
            raise OracleMismatch(f"fault {self.index} ({name}): header {skip} never sent")
        await self._check(f"{name} on header {skip} of a {packets}-packet {direction} transfer",
                    before, {"lbad": 1})

    async def header_crc16(self) -> None:
        wrong = self.rng.randrange(1, 1 << 16)

        def mutate(block: bytearray) -> None:
            block[16] ^= wrong & 0xFF
            block[17] ^= wrong >> 8
        await self._header_fault("header_crc16", mutate)

    async def control_word_crc5(self) -> None:
        bit = self.rng.randrange(11, 16)  # the CRC-5 field of the link control word
        await self._header_fault("control_word_crc5",
                                 lambda block: block.__setitem__(18 + bit // 8,
                                                                 block[18 + bit // 8]
                                                                 ^ 1 << bit % 8))

    async def header_symbol(self) -> None:
        await self._header_fault("header_symbol", lambda block: self._flip(block, 4, 20))

    async def _payload_fault(self, name: str, mutate: Callable[[bytearray], None]) -> None:
        packets = self.rng.randint(1, 4)
        before = self._snapshot()
        self.partner.corrupt_header(self.rng.randrange(packets), mutate, with_payload=True)
        await self.transfer("out", packets)
        if self.partner.corruption_pending:
            raise OracleMismatch(f"fault {self.index} ({name}): payload never sent")
        self.tally.expected_telemetry["out_bad_dps"] += 1
        # The DPs behind the bad one are sent again too (the device's Rty): counted by the
        # host, how many depends on the burst in flight.
        await self._check(name, before, {}, free=("host_rty",))

    async def dpp_crc32(self) -> None:
        wrong = self.rng.randrange(1, 1 << 32).to_bytes(4, "little")

        def mutate(block: bytearray) -> None:
            block[-8:-4] = bytes(a ^ b for a, b in zip(block[-8:-4], wrong, strict=True))
        await self._payload_fault("dpp_crc32", mutate)

    async def payload_symbol(self) -> None:
        await self._payload_fault(
            "payload_symbol",
            lambda block: self._flip(block, HEADER_SYMBOLS + 4, len(block) - 8))

    async def device_header_crc(self) -> None:
        """The device's ACK TP for an OUT DP arrives broken: LBAD, LRTY, the TP again."""
        before = self._snapshot()
        self.link.corrupt_received_tps = 1
        await self.transfer("out", self.rng.randint(1, 4))
        await self._check("device_header_crc", before, {"lrty": 1})

    async def device_dpp_crc32(self) -> None:
        """The last IN DP of a transfer arrives broken: one Rty, the device sends it again. (The
        last: after it no DP is in flight, so exactly one retry follows.)"""
        packets = self.rng.randint(1, 4)
        if packets > 1:
            await self.transfer("in", packets - 1)
        before = self._snapshot()
        self.link.corrupt_received_dpps = 1
        await self.transfer("in", 1)
        # Seen by the device as one DP sent twice: ``in_dps_sent`` - ``in_packets`` moves by one
        # (its ``in_retries`` misses the resend of the newest DP, see the deviation tests).
        self.tally.expected_telemetry["in_dps_resent"] += 1
        await self._check("device_dpp_crc32", before, {"host_rty": 1})

    async def _lost_command(self, name: str, command: LinkCommand) -> None:
        """Drop the command owed for the device's only header in a one-packet OUT transfer,
        then run another: its LGOOD / LCRD arrives out of order. That one runs clear of an ITP
        boundary, so no ITP is on the wire when the device leaves U0 (the device then drops
        or half-receives it, which the host sends again; exact, but not predictable here)."""
        await self.transfer("out", 1)  # settle: every command owed sent
        self.partner.drop_command(command)
        before = self._snapshot()
        await self.transfer("out", 1)
        if self.partner.dropped[command.name] == 0 or self._snapshot()["recovery"] \
                != before["recovery"]:
            raise OracleMismatch(f"fault {self.index} ({name}): {command.name} not dropped or "
                                 f"Recovery before the next one")
        to_itp = -self.partner.cycle % ITP_INTERVAL_CYCLES
        if to_itp < ITP_CLEARANCE_CYCLES:
            await self.partner.wait_cycles(to_itp + 16)
        await self.transfer("out", 1)
        await self._await_recovery(name, before)
        await self._check(name, before, {"recovery": 1})

    async def _await_recovery(self, name: str, before: dict[str, int], unseen: int = 0) -> None:
        deadline = self.partner.cycle + RECOVERY_NOTICE_CYCLES
        while not device_in_recovery(self.partner, before["recovery"]):
            if self.partner.cycle > deadline:
                raise OracleMismatch(f"fault {self.index} ({name}): the device stayed in U0")
            await self.partner.wait_cycles(32)
        await self._recover(name, unseen)

    async def _recover(self, name: str, unseen: int = 0) -> None:
        """Recovery; the device must then advertise the last header the host sent, or the one
        ``unseen`` before it (those the device never saw, which the host sends again)."""
        sent = (self.link.last_sent_sequence - unseen) % 8
        await self.link.recover()
        if self.link.device_advertisement != sent:
            raise OracleMismatch(f"fault {self.index} ({name}): after Recovery the device's last "
                                 f"header is {self.link.device_advertisement}, the host sent "
                                 f"{sent}")

    async def lost_lgood(self) -> None:
        await self._lost_command("lost_lgood", LinkCommand.LGOOD)

    async def lost_lcrd(self) -> None:
        await self._lost_command("lost_lcrd", LinkCommand.LCRD)

    async def device_dp_header_crc(self) -> None:
        """The header of the last IN DP of a transfer arrives broken: the host answers LBAD,
        the device sends LRTY and the header again, its payload nullified (LUNA's link keeps no
        payloads: ``link/transmitter.py`` aborts a retried DP's with EDB and leaves the payload
        to the protocol layer); the host asks for the DP again with one Rty, and the endpoint
        sends it again."""
        packets = self.rng.randint(1, 4)
        if packets > 1:
            await self.transfer("in", packets - 1)
        before = self._snapshot()
        self.link.corrupt_received_dphs = 1
        await self.transfer("in", 1)
        if self.link.corrupt_received_dphs:
            raise OracleMismatch(f"fault {self.index} (device_dp_header_crc): no IN DP")
        self.tally.expected_telemetry["in_dps_resent"] += 1
        await self._check("device_dp_header_crc", before, {"lrty": 1, "host_rty": 1})

    async def u0_recovery(self) -> None:
        """Recovery from an idle link: every header sent has reached the device first (a header
        still on the lane would be the host's to resend, not the device's to have lost)."""
        await self.partner.wait_backlog(0)
        await self.partner.wait_cycles(SETTLE_CYCLES)
        before = self._snapshot()
        await self._recover("u0_recovery")
        await self._check("u0_recovery", before, {"recovery": 1})

    # -- the run ---------------------------------------------------------------------------

    async def run(self, faults: int, kinds: tuple[str, ...] | None = None,
                  progress: Callable[[int], None] | None = None) -> HostileTally:
        """``faults`` faults drawn from ``kinds`` (default :data:`FAULTS`), each carried by or
        followed by a valid transfer in a random direction."""
        kinds = kinds or FAULTS
        for self.index in range(faults):
            name = self.rng.choice(kinds)
            self.tally.faults[name] += 1
            await getattr(self, name)()
            if not int(self.session.dut.link_trained.value):
                raise OracleMismatch(f"fault {self.index} ({name}): the device is not in U0")
            await self.transfer(self.rng.choice(("in", "out")), self.rng.randint(1, 2))
            if progress and self.index % 500 == 499:
                progress(self.index + 1)
        return self.tally

    async def telemetry(self) -> dict[str, int]:
        """The device's counters, to compare with :attr:`tally`."""
        return contract.unpack_telemetry(await self.session.protocol.control(
            0xC0, contract.Request.GET_TELEMETRY, 0, 0, contract.TELEMETRY_SIZE))


#: Fault injections, by method name.
FAULTS = ("header_crc16", "control_word_crc5", "header_symbol", "dpp_crc32", "payload_symbol",
          "device_header_crc", "device_dpp_crc32", "lost_lgood", "lost_lcrd", "u0_recovery",
          "header_framing", "device_dp_header_crc", "device_lgood_crc5", "device_lcrd_crc5",
          "mid_transfer_recovery")
