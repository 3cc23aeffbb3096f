"""Several hosts on one simulated clock: the simulator's side of the RPC, request by request.

One simulation may host several devices (``sim:pcie?endpoints=2``, two USB devices behind a
hub), each driven by its own host driver in a thread of the host process, all over one socket
(:mod:`.rpc`). A request may carry a *channel* (the device it is for); requests of different
channels run at once, each as a coroutine of its own, and are answered as each finishes.

The rule that keeps a host infinitely fast on the simulated clock (:mod:`.rpc`) still holds for
every host that takes part: a channel *joins* the clock (``@join``) and from then on simulated
time passes only while every joined channel has a request in progress. While one of them
computes (its answer sent, its next request not yet read), the simulator blocks reading the
socket and time stands still for all. ``@barrier`` answers every joined channel at the same
simulated instant, once all of them wait in it: points measured together *start* together.
``@leave`` lets the others go on without this channel (a host that has finished its stream, or
waits for the others on its own side). Without joined channels this is the one-request-at-a-time
server it always was.

Wire: a request is ``(name, args)`` (no channel, answered ``(status, value)``) or
``(name, args, channel)`` (answered ``(status, value, channel)``).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Hashable
from typing import Any

import cocotb
from cocotb.triggers import Event

from .channels import BARRIER, JOIN, LEAVE

__all__ = ["Dispatcher", "JOIN", "LEAVE", "BARRIER", "CONTROL"]

#: Requests the dispatcher answers itself (no handler method).
CONTROL = (JOIN, LEAVE, BARRIER)
_NO_CHANNEL = object()


class Dispatcher:
    """Reads requests, runs them (at once where their channels allow) and answers them.

    Parameters
    ----------
    sock : socket
        The connection to the host process.
    handler_for : callable
        ``channel -> handler`` whose ``rpc_<name>`` coroutine serves a request (``None`` for a
        request without a channel).
    recv, send : callable
        The wire (:func:`busprobe.sim.rpc.recv` / :func:`~busprobe.sim.rpc.send`).
    error_reply : callable
        ``exception -> ("err", detail)``.
    closed : exception type
        What ``recv`` raises when the host closed the connection.
    """

    def __init__(self, sock: socket.socket, handler_for: Callable[[Any], Any], *,
                 recv: Callable[[socket.socket], Any],
                 send: Callable[[socket.socket, object], None],
                 error_reply: Callable[[BaseException], tuple[str, Any]],
                 closed: type[Exception] = EOFError) -> None:
        self.sock = sock
        self.handler_for = handler_for
        self._recv, self._send, self._error_reply = recv, send, error_reply
        self._closed = closed
        self.joined: set[Hashable] = set()
        self.running: set[Hashable] = set()  # channels with a request in progress
        self.waiting: set[Hashable] = set()  # joined channels in the barrier
        self._finished = Event()

    def _reply(self, channel: Any, reply: tuple[str, Any]) -> None:
        self._send(self.sock, reply if channel is _NO_CHANNEL else (*reply, channel))

    def _must_read(self) -> bool:
        """Time may not pass: nothing runs, or a joined channel owes us its next request."""
        busy = self.running | self.waiting
        return not busy or not self.joined <= busy

    async def run(self) -> None:
        """Serve until ``shutdown`` or until the host closes the connection."""
        while True:
            while self._must_read():
                try:
                    message = self._recv(self.sock)  # blocks: simulated time stands still
                except self._closed:
                    return
                if not self._take(message):
                    return
            if self.joined and self.joined <= self.waiting:
                for channel in sorted(self.waiting, key=repr):  # all start at this instant
                    self._reply(channel, ("ok", None))
                self.waiting.clear()
                continue
            self._finished.clear()
            await self._finished.wait()

    def _take(self, message: tuple) -> bool:
        """Start (or answer) one request; False after ``shutdown``."""
        name, args = message[0], message[1]
        channel = message[2] if len(message) > 2 else _NO_CHANNEL
        if name == "shutdown":
            self._reply(channel, ("ok", None))
            return False
        if name in CONTROL:
            if name == BARRIER and channel in self.joined:
                self.waiting.add(channel)
                return True
            if name == JOIN:
                self.joined.add(channel)
            elif name == LEAVE:
                self.joined.discard(channel)
                self.waiting.discard(channel)
            self._reply(channel, ("ok", None))  # a barrier of a channel not joined: at once
            return True
        if channel in self.running:
            self._reply(channel, self._error_reply(RuntimeError(
                f"request {name} while the channel's previous one is still running")))
            return True
        self.running.add(channel)
        cocotb.start_soon(self._serve(channel, name, args))
        return True

    async def _serve(self, channel: Any, name: str, args: tuple) -> None:
        handler = self.handler_for(None if channel is _NO_CHANNEL else channel)
        try:
            reply: tuple[str, Any] = ("ok", await getattr(handler, f"rpc_{name}")(*args))
        except Exception as exc:  # report, keep serving
            reply = self._error_reply(exc)
        self.running.discard(channel)
        self._reply(channel, reply)
        self._finished.set()
