"""``sim:pcie`` — the busprobe PCIe device in simulation, driven by the real host driver.

``sim:pcie?gen=1|2|3&width=1&mps=..&mrrs=..&cap=BYTES_PER_S&latency_ns=..&rcb=64|128``

The Verilator model of the gateware runs in a cocotb process (:mod:`busprobe.sim.pcie.server`)
behind a cocotbext-pcie root complex; this process runs
:class:`~busprobe.backends.pcie.driver.PcieDmaDriver`, the same driver the VFIO backend uses,
against a :class:`SimPlatform` whose BAR, buffers and MSI calls cross to the simulator over
:mod:`busprobe.sim.rpc`. :meth:`~busprobe.transport.Transport.now` is simulated time.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from busprobe.backends.pcie.config import LINK_SPEEDS
from busprobe.backends.pcie.dma_transport import PcieDmaTransport
from busprobe.backends.pcie.driver import DmaPlatform
from busprobe.protocol import pcie as proto
from busprobe.selectors import Selector
from busprobe.transport import BusDescription, InvalidRequest

from ..simulator import SimServer

__all__ = ["open_sim_pcie", "SimPcieTransport", "SimPlatform", "parse_link_options"]

_INT_OPTIONS = {"gen": (1, 2, 3), "width": (1,), "mps": (128, 256, 512),
                "mrrs": (128, 256, 512, 1024, 2048, 4096), "rcb": (64, 128)}


def parse_link_options(options: dict[str, str]) -> dict[str, Any]:
    """Selector options -> :class:`~busprobe.sim.pcie.testbench.LinkConfig` fields.

    One-line :class:`InvalidRequest` for unknown names and bad values.
    """
    link: dict[str, Any] = {"gen": 2, "width": 1, "mps": 256, "mrrs": 512}
    for key, text in options.items():
        try:
            if key in _INT_OPTIONS:
                value = int(text)
                if value not in _INT_OPTIONS[key]:
                    raise ValueError
                link[key] = value
            elif key == "cap":
                link["cap"] = float(text) if text else None
                if link["cap"] is not None and link["cap"] <= 0:
                    raise ValueError
            elif key == "latency_ns":
                link["latency_ns"] = float(text)
                if link["latency_ns"] < 0:
                    raise ValueError
            else:
                raise InvalidRequest(
                    f"sim:pcie has no option {key!r} (gen, width, mps, mrrs, cap, latency_ns, rcb)")
        except ValueError:
            allowed = ("|".join(map(str, _INT_OPTIONS[key])) if key in _INT_OPTIONS
                       else "a non-negative number")
            raise InvalidRequest(f"sim:pcie option {key}={text!r}: expected {allowed}") from None
    return link


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send file descriptor 1 (this process and its children) to stderr for a while."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


class _SimBar:
    def __init__(self, server: SimServer) -> None:
        self._call = server.call

    def read32(self, offset: int) -> int:
        return self._call("read32", offset)

    def write32(self, offset: int, value: int) -> None:
        self._call("write32", offset, value)

    def write32_many(self, writes: list[tuple[int, int]]) -> None:
        self._call("write32_many", writes)


class _SimBuffer:
    """Root-complex memory in the simulator (no bus traffic to read or write it)."""

    def __init__(self, server: SimServer, size: int) -> None:
        self._call = server.call
        self.size = size
        self.handle, self.bus_address = self._call("alloc", size)

    def read(self, offset: int, length: int) -> bytes:
        return self._call("buf_read", self.handle, offset, length)

    def write(self, offset: int, data: bytes) -> None:
        self._call("buf_write", self.handle, offset, bytes(data))


class _SimMsi:
    def __init__(self, server: SimServer) -> None:
        self._call = server.call

    def wait(self, timeout: float) -> bool:
        return self._call("wait_msi", timeout)


class SimPlatform:
    """:class:`~busprobe.backends.pcie.driver.DmaPlatform` executed in the simulator."""

    def __init__(self, server: SimServer) -> None:
        self.server = server
        self.bar = _SimBar(server)
        self.msi = _SimMsi(server)

    def alloc(self, size: int) -> _SimBuffer:
        return _SimBuffer(self.server, size)

    def free(self, buf: _SimBuffer) -> None:
        self.server.call("free", buf.handle)

    def now(self) -> float:
        return self.server.call("now")


class SimPcieTransport(PcieDmaTransport):
    """The simulated device; see the module docstring for the selector."""

    # A simulated link is deterministic (no jitter to average out) and slow to run: the bench
    # simulates ~35 us of link time per wall second (~30 s per MiB at Gen2 x1). Two transfers
    # and 64 KiB per point amortise start-up (the first descriptors' MMIO writes, ~0.2 us) to
    # under 0.2 %, and the default ladder stops at 256 KiB so a default sweep takes minutes.
    min_transfers = 2
    min_bytes = 64 << 10
    default_max_length = 256 << 10

    def __init__(self, selector: Selector) -> None:
        super().__init__(selector.text)
        self.link = parse_link_options(selector.options)
        self.server: SimServer | None = None
        # Timeouts are on the simulated clock: 20 us plus 10 MB/s is 40x slower than the link,
        # so only a stuck DMA meets them, and it is found in seconds of wall time.
        self.driver_options = {"timeout": lambda nbytes: 20e-6 + nbytes / 10e6,
                               "irq_slice": 20e-6}

    def _open_platform(self) -> DmaPlatform:
        from .server import ENV_LINK
        from .testbench import TIMESCALE, TOPLEVEL, build_pcie_simulator

        with _stdout_to_stderr():  # the build's make/verilator chatter must not reach --json -
            build_dir = build_pcie_simulator()
        self.server = SimServer(build_dir, TOPLEVEL, "busprobe.sim.pcie.server",
                                name=self.selector, env={ENV_LINK: json.dumps(self.link)},
                                timescale=TIMESCALE)
        return SimPlatform(self.server)

    def _close_platform(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None

    @property
    def bus(self) -> BusDescription:
        return BusDescription(
            kind="pcie", speed=LINK_SPEEDS[self.link["gen"]], width=self.link["width"],
            mps=self.identity.get("mps", self.link["mps"]),
            mrrs=self.identity.get("mrrs", self.link["mrrs"]),
            # What the ceiling model must assume for this link (busprobe.model.pcie), as
            # busprobe.sim.pcie.testbench documents it: no SKP ordered sets, one ACK and one
            # UpdateFC DLLP per read request, completions as large as MPS allows; the root adds
            # ``latency_ns`` to reads and the core keeps READ_TAGS reads in flight.
            extra={"rcb": self.link.get("rcb", 64), "cap": self.link.get("cap"),
                   "latency_ns": self.link.get("latency_ns", 0.0), "simulated": True,
                   "skp": False, "ack_every": 1, "updatefc_every": 1, "split_at_rcb": False,
                   "read_latency_ns": self.link.get("latency_ns", 0.0),
                   "outstanding_reads": proto.READ_TAGS})

    def configure(self, **settings: Any) -> None:
        unknown = set(settings) - {"mps", "mrrs"}
        if unknown:
            raise InvalidRequest(f"{self.selector}: cannot set {', '.join(sorted(unknown))}")
        for key, value in settings.items():
            if value not in _INT_OPTIONS[key]:
                raise InvalidRequest(f"sim:pcie {key} {value}: expected "
                                     f"{'|'.join(map(str, _INT_OPTIONS[key]))}")
        self.link.update(settings)
        if self.server is not None:
            self.server.call("configure", settings.get("mps"), settings.get("mrrs"))
            self.identity = self._driver().probe()

    def topology(self) -> list[dict[str, Any]]:
        """The modelled hops (busprobe.topology.sim): root port and device, with link state."""
        from busprobe.topology.sim import sim_hops

        options = {k: str(v) for k, v in self.link.items() if v is not None}
        return [hop.to_json() for hop in sim_hops("pcie", options)]


def open_sim_pcie(selector: Selector) -> SimPcieTransport:
    return SimPcieTransport(selector)
