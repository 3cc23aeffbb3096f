"""Faults of :mod:`.hostile` that take the link through Recovery with no device header in
flight (LUNA would lose it, see docs/DESIGN.md §4.2's departures): on an idle link, a header
whose framing is lost and the device's own link commands arriving broken, each carried by two
ITPs, which ask nothing back; and a Recovery between two DPs of an OUT transfer, once every
header before it is acknowledged both ways."""

from __future__ import annotations

from .framing import LinkCommand
from .protocol import itp_header

__all__ = ["IdleLinkFaults", "SETTLE_CYCLES", "RECOVERY_NOTICE_CYCLES"]

#: Cycles the host waits for a device to leave U0 after the link command that must make it.
RECOVERY_NOTICE_CYCLES = 5_000
#: Cycles after a carrying transfer or header before its fault's answer is counted: a link
#: command the device owes waits behind a data packet it is sending (1,056 symbols, 264 cycles).
SETTLE_CYCLES = 400


class IdleLinkFaults:
    """Mixed into :class:`~.hostile.HostileHost`, whose oracle helpers these use (``Mismatch``
    is its :class:`~.hostile.OracleMismatch`)."""

    async def header_framing(self) -> None:
        """A header's HPSTART arrives as four broken symbols: the device never sees the header.
        On an idle link (ITPs: no device header in flight) the next header's sequence number is
        then one past the device's, so it goes to Recovery (§7.2.4.1.5), advertises the header
        before the lost one, and the host sends both again."""
        await self.partner.wait_backlog(0)
        await self.partner.wait_cycles(SETTLE_CYCLES)
        before = self._snapshot()
        self.partner.corrupt_header(0, lambda block: block.__setitem__(slice(0, 4), bytes(4)))
        await self.link.send_header(itp_header(self.index & 0x3FFF))
        await self.partner.wait_cycles(SETTLE_CYCLES)
        if self._snapshot()["recovery"] != before["recovery"]:
            raise self.Mismatch(f"fault {self.index} (header_framing): Recovery before the "
                                f"next header")
        await self.link.send_header(itp_header(self.index + 1 & 0x3FFF))
        await self._await_recovery("header_framing", before, unseen=2)
        await self._check("header_framing", before, {"recovery": 1, "lost_headers": 2})

    async def _device_command_fault(self, name: str, command: LinkCommand) -> None:
        """A device LGOOD / LCRD arrives broken (ignored, ``bad_commands`` + 1). On an idle link
        the host sends two ITPs, the first's command is broken, the second's is then out of
        order: the host goes to Recovery (§7.2.4.1.3, .1.7), the device follows once and
        advertises the second ITP. (ITPs ask nothing back: no device header is in flight,
        which LUNA would lose at Recovery, see the departures.)"""
        link = self.link
        await self.partner.wait_backlog(0)
        await self.partner.wait_cycles(SETTLE_CYCLES)
        before = self._snapshot()
        link.corrupt_device_command, link.out_of_order = command, None
        link.recover_on_out_of_order = True
        try:
            await link.send_header(itp_header(self.index & 0x3FFF))
            await self.partner.wait_cycles(SETTLE_CYCLES)
            if link.corrupt_device_command is not None or link.out_of_order is not None:
                raise self.Mismatch(f"fault {self.index} ({name}): no {command.name} for the "
                                    f"first ITP, or one out of order ({link.out_of_order})")
            await link.send_header(itp_header(self.index + 1 & 0x3FFF))
            deadline = self.partner.cycle + SETTLE_CYCLES
            while link.out_of_order is None:
                if self.partner.cycle > deadline:
                    raise self.Mismatch(f"fault {self.index} ({name}): the {command.name} "
                                        f"after the broken one came in order")
                await self.partner.wait_cycles(16)
        finally:
            link.recover_on_out_of_order = False
        await self._recover(name)
        await self._check(name, before, {"recovery": 1, "bad_commands": 1})

    async def device_lgood_crc5(self) -> None:
        await self._device_command_fault("device_lgood_crc5", LinkCommand.LGOOD)

    async def device_lcrd_crc5(self) -> None:
        await self._device_command_fault("device_lcrd_crc5", LinkCommand.LCRD)

    async def mid_transfer_recovery(self) -> None:
        """Recovery between two DPs of a 2-4 packet OUT transfer, once every header before has
        been acknowledged both ways (none in flight: LUNA would lose one, see the departures):
        the device follows once and the transfer completes, nothing sent again."""
        name, packets = "mid_transfer_recovery", self.rng.randint(2, 4)
        at = self.rng.randrange(1, packets)
        before = self._snapshot()

        async def recover() -> None:
            deadline = self.partner.cycle + RECOVERY_NOTICE_CYCLES
            while self.link.headers_unacknowledged:
                if self.partner.cycle > deadline:
                    raise self.Mismatch(f"fault {self.index} ({name}): DPs never LGOODed")
                await self.partner.wait_cycles(16)
            await self.partner.wait_cycles(SETTLE_CYCLES)  # the device's ACK TPs, our LGOODs
            await self._recover(f"{name} before DP {at} of {packets}")
        self.link.before_payload = (at, recover)
        await self.transfer("out", packets)
        if self.link.before_payload is not None:
            raise self.Mismatch(f"fault {self.index} ({name}): DP {at} never sent")
        await self._check(name, before, {"recovery": 1})
