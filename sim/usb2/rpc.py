"""The tiny RPC between the sim Transport (host process) and the cocotb server (simulator).

A message is ``<u32 header length, u32 payload length>``, a JSON header, then raw payload bytes
(descriptor data, OUT data, IN data), so bulk data crosses without any encoding.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

__all__ = ["send_message", "recv_message", "ENV_SOCKET", "ConnectionClosed"]

#: Environment variable naming the Unix socket the server connects to.
ENV_SOCKET = "BUSPROBE_SIM_SOCKET"
_HEAD = struct.Struct("<II")


class ConnectionClosed(Exception):
    """The other end closed the connection."""


def send_message(sock: socket.socket, header: dict[str, Any], payload: bytes = b"") -> None:
    text = json.dumps(header).encode()
    sock.sendall(_HEAD.pack(len(text), len(payload)) + text + payload)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(min(size - len(chunks), 1 << 20))
        if not chunk:
            raise ConnectionClosed("connection closed")
        chunks += chunk
    return bytes(chunks)


def recv_message(sock: socket.socket) -> tuple[dict[str, Any], bytes]:
    header_size, payload_size = _HEAD.unpack(_recv_exact(sock, _HEAD.size))
    header = json.loads(_recv_exact(sock, header_size))
    return header, _recv_exact(sock, payload_size) if payload_size else b""
