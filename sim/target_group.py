"""Several targets in one simulation: what ``sim:pcie?endpoints=N`` and ``sim:usb2?devices=N``
share once their simulator is built."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from busprobe.transport import TransportError

from .channels import SimClock
from .simulator import SimServer

__all__ = ["SimTargetGroup"]


class SimTargetGroup:
    """The targets one simulator hosts, each a transport on an RPC channel of its own.

    A subclass builds its simulator in ``open`` and hands the running server to :meth:`serve`.

    Attributes
    ----------
    name : str
        The selector that named them all.
    transports : list
        Target i's transport.
    targets : list of (str, transport)
        ``selector#i`` and target i's transport.
    clock : SimClock
        How their streams start together.
    server : SimServer or None
        The one simulator, while open.

    Parameters
    ----------
    name : str
        The selector.
    transports : sequence
        The targets' transports, not yet open.
    """

    def __init__(self, name: str, transports: Sequence[Any]) -> None:
        self.name = name
        self.server: SimServer | None = None
        self.transports = list(transports)
        self.targets = [(t.selector, t) for t in self.transports]
        self.clock = SimClock(self)

    def serve(self, server: SimServer) -> None:
        """Open every target on ``server``; if one fails, close all and the server."""
        self.server = server
        try:
            for transport in self.transports:
                transport.open()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for transport in self.transports:
            try:
                transport.close()
            except TransportError:
                pass
        if self.server is not None:
            self.server.close()
            self.server = None
