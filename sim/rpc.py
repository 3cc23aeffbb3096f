"""The one RPC between a simulated backend (host process) and its cocotb server (simulator).

A simulated backend keeps the real host driver in the host process and sends each control
transfer, bulk stream, register access, memory access or "let time pass" request to the
simulator, which carries it out in simulated time and answers. While the simulator waits for the
next request it is blocked in ``recv``, so simulated time stands still while the host computes:
the host is infinitely fast on the simulated clock.

Wire format: length-prefixed pickles over a Unix socket private to the two processes (bulk data
travels as ``bytes`` inside them, without encoding). The conversation is::

    simulator -> host   ("hello", {"pid": simulator pid})       as soon as it connects
    simulator -> host   ("ok", info) | ("err", (kind, message))  once ``setup`` finished
    host -> simulator   (name, args)                            then one answer each:
    simulator -> host   ("ok", value) | ("err", (kind, message))
    host -> simulator   ("shutdown", ())                        answered ("ok", None)

A simulation hosting several devices carries a channel (the device) in each request and answer,
and runs requests of different channels at once on its one clock (:mod:`.shared_clock`).

The host side (:class:`~busprobe.sim.simulator.SimServer`) learns the simulator's pid from the
hello, so its watchdog can tell a dead or stopped simulator from a busy one.
"""

from __future__ import annotations

import os
import pickle
import socket
import struct
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from busprobe.transport import TransportError

__all__ = ["ENV_SOCKET", "RemoteError", "send", "recv", "PeerClosed", "serve", "out_buffers",
           "on_the_bus", "BusErrors"]

#: Environment variable naming the Unix socket the simulator connects to.
ENV_SOCKET = "BUSPROBE_RPC_SOCKET"
_HEADER = struct.Struct("<Q")


class RemoteError(TransportError):
    """The simulator side raised an exception that has no TransportError equivalent."""


class PeerClosed(EOFError):
    """The other end closed the connection (it exited, or was killed)."""


def send(sock: socket.socket, obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        chunk = sock.recv_into(view[got:], min(n - got, 1 << 20))
        if not chunk:
            raise PeerClosed("peer closed the connection")
        got += chunk
    return bytes(buf)


def recv(sock: socket.socket) -> Any:
    (size,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    return pickle.loads(_recv_exact(sock, size))


def _error_reply(exc: BaseException) -> tuple[str, tuple[Any, str]]:
    # TransportError / ValueError subclasses travel as their type, so the host raises the same
    # one-line error (a TransferTimeout stays a TransferTimeout); anything else by name.
    if isinstance(exc, TransportError | ValueError):
        return "err", (type(exc), str(exc))
    return "err", (type(exc).__name__, str(exc))


async def serve(setup: Callable[[], Awaitable[tuple[object, Any]]]) -> None:
    """Simulator side: connect, say hello, set up, then answer requests until shutdown or EOF.

    ``setup()`` returns ``(handler, info)``: each request ``(name, args)`` then runs
    ``await handler.rpc_<name>(*args)``, and ``info`` (picklable) is what the host's start-up
    returns. A simulation of several devices returns a list of handlers, one per channel
    (:mod:`.shared_clock`; a request without a channel goes to the first). A failing ``setup``
    is reported to the host as the start-up error.
    """
    from .shared_clock import Dispatcher

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(os.environ[ENV_SOCKET])
    try:
        send(sock, ("hello", {"pid": os.getpid()}))
        try:
            handler, info = await setup()
        except Exception as exc:
            send(sock, _error_reply(exc))
            return
        send(sock, ("ok", info))

        def handler_for(channel: Any) -> object:
            if isinstance(handler, list | tuple):
                return handler[0 if channel is None else channel]
            return handler

        await Dispatcher(sock, handler_for, recv=recv, send=send, error_reply=_error_reply,
                         closed=PeerClosed).run()
    finally:
        sock.close()


def out_buffers(outgoing: Sequence[bytes] | None) -> Callable[[int], bytes]:
    """The OUT source a simulated host controller takes, made of the buffers a stream request
    carried: each call returns the next one, which must be exactly as long as asked."""
    pending = iter(outgoing or ())

    def source(n: int) -> bytes:
        data = next(pending, None)
        if data is None or len(data) != n:
            raise ValueError(f"OUT transfer {n} bytes: the host sent no such buffer")
        return data

    return source


#: ``(host-model exception types, transport error)`` pairs, the first match wins.
BusErrors = Sequence[tuple[type[BaseException] | tuple[type[BaseException], ...], type[Exception]]]

T = TypeVar("T")


async def on_the_bus(what: str, action: Callable[[], Awaitable[T]], errors: BusErrors) -> T:
    """Run ``action``; a host-model error listed in ``errors`` becomes that transport error,
    one line naming ``what``."""
    try:
        return await action()
    except Exception as exc:
        for kinds, error in errors:
            if isinstance(exc, kinds):
                raise error(f"{what}: {exc}") from None
        raise
