"""The late plug: refused until plugged, then one connection relayed both ways (no QEMU)."""

import socket
import threading

import pytest
from busprobe.sim.vm.late_plug import LatePlug


def test_connections_are_refused_until_plugged_then_relayed_both_ways():
    late = LatePlug("disk")
    assert f"port={late.port},reconnect=1" in " ".join(late.qemu_args("hc.0"))
    with pytest.raises(ConnectionRefusedError):  # what QEMU sees: no device yet
        socket.create_connection(("127.0.0.1", late.port), timeout=2)
    exporter = socket.create_server(("127.0.0.1", 0))
    got: list[bytes] = []

    def serve() -> None:
        conn, _ = exporter.accept()
        got.append(conn.recv(5))
        conn.sendall(b"hello")
        conn.close()

    thread = threading.Thread(target=serve)
    thread.start()
    late.plug(exporter.getsockname()[1])
    guest = socket.create_connection(("127.0.0.1", late.port), timeout=5)
    guest.sendall(b"usbrd")
    assert guest.recv(5) == b"hello"
    assert guest.recv(5) == b""  # the exporter's end reaches the guest
    thread.join(5)
    assert got == [b"usbrd"]
    guest.close()
    late.close()
    exporter.close()
