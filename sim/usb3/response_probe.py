"""How long the device takes to answer, measured at its PIPE ports from a stream's traffic.

The model's round trip (``busprobe.model.usb3.DEVICE_RESPONSE_CYCLES``) holds the busprobe
device's answer time; this probe measures it in the simulation so a test can hold the two
together: the cycles strictly between the last symbol the host model sent and the first symbol
of the device's answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import cocotb
from busprobe.protocol.names import Direction
from cocotb.triggers import ValueChange

from .link import SuperSpeedLink
from .pipe import Capture, CaptureType

__all__ = ["DeviceResponseProbe"]


@dataclass(frozen=True)
class _HostBlock:
    end: int
    data: bool      # a header with a payload (a DP)


class DeviceResponseProbe:
    """Records, while entered, the end of every header the host sends and every packet the
    device sends.

    Use as ``with DeviceResponseProbe(session.link) as probe: await ...stream(...)``, then
    :meth:`responses`.

    Parameters
    ----------
    link: SuperSpeedLink
        The host side's link layer; its ``send_header`` and its partner's ``capture`` are
        wrapped while the probe is entered.
    """

    def __init__(self, link: SuperSpeedLink) -> None:
        self._link = link
        self._partner = link.partner
        self.host: list[_HostBlock] = []
        self.device: list[Capture] = []

    def __enter__(self) -> DeviceResponseProbe:
        link, partner = self._link, self._partner
        self._send, self._capture = link.send_header, partner.capture

        async def send_header(dws, payload=None, **kwargs):
            before = partner.blocks_done
            queued = await self._send(dws, payload, **kwargs)

            async def sent() -> None:
                while partner.blocks_done == before:
                    await ValueChange(partner.dut.blk_done)
                self.host.append(_HostBlock(partner.last_block_end, payload is not None))
            cocotb.start_soon(sent())
            return queued

        async def capture(timeout_cycles: int) -> Capture | None:
            captured = await self._capture(timeout_cycles)
            if captured is not None:
                self.device.append(captured)
            return captured

        link.send_header, partner.capture = send_header, capture
        return self

    def __exit__(self, *exc: object) -> None:
        self._link.send_header, self._partner.capture = self._send, self._capture

    def responses(self, direction: str) -> list[int]:
        """Cycles strictly between the host's last symbol and the device's answer, one per
        round trip of a one-packet window: IN, from an ACK TP to the next DP's header (the
        device's link commands in between count); OUT, from a DP to the device's ACK TP."""
        packets = self.device
        incoming = direction == Direction.IN
        answers = [packet for index, packet in enumerate(packets)
                   if packet.kind == CaptureType.HEADER
                   and (index + 1 < len(packets) and packets[index + 1].kind
                        in (CaptureType.DATA, CaptureType.DATA_NULLIFIED)) == incoming]
        gaps = []
        for answer in answers:
            before = [block for block in self.host if block.end < answer.start]
            if not before or before[-1].data != (direction == Direction.OUT):
                continue
            # Only an answer to the host's block: no other device header since that block.
            last = before[-1].end
            if any(p.kind == CaptureType.HEADER and last < p.start < answer.start
                   for p in packets):
                continue
            gaps.append(answer.start - last - 1)
        return gaps
