"""``sim:usb3``: the busprobe SuperSpeed gateware in Verilator, as a :class:`UsbPlatform`.

:func:`open_sim_usb3` returns the same :class:`~busprobe.backends.usb.UsbDeviceTransport` a
board gets, over :class:`SimUsb3Platform`: each control transfer and bulk stream crosses to the
simulator (:mod:`busprobe.sim.usb3.server`, through :class:`~busprobe.sim.simulator.SimServer`)
and is carried out there by the xHCI model through the PIPE link partner. Every IN byte comes
back to this process for the sweep's pattern check; :meth:`SimUsb3Platform.now` is simulated
time. The driver recognises the SuperSpeed device by its INFO answer, as on a board.

Selector options: ``host=ideal|vl805|small-burst|FILE.toml`` (host-controller profile, default
``ideal``), ``burst=1..16`` (cap on the host's burst window, default 16),
``design=busprobe|storage`` (the probe, or the ``usb3-storage`` null disk over BOT).
"""

from __future__ import annotations

from collections.abc import Sequence

from busprobe.backends.usb import UsbDeviceTransport
from busprobe.protocol import usb3
from busprobe.protocol.streams import PIPE_PRIMES
from busprobe.targets import TargetDescription
from busprobe.targets.sim_usb3 import DESIGN_FEATURES
from busprobe.transport import InvalidRequest

from ..netlist.usb3 import build_usb3_netlist_simulator
from ..usb_platform import SimUsbPlatform
from .server import ENV_BURST, ENV_PROFILE
from .simulator_build import TOPLEVEL, build_usb3_simulator

__all__ = ["open_sim_usb3", "SimUsb3Platform", "SimUsb3Transport"]


class SimUsb3Transport(UsbDeviceTransport):
    """The USB device transport over the simulated SuperSpeed gateware, with the simulation's
    amortisation.

    The simulation is deterministic and runs at ~250-320 k cycles/s of the 125 MHz clock (~2.4
    ms of bus time, about 1 MiB at the link's rate, per wall second), so a repeat is one
    MiB: with the model's start-up (the first ACK TP's round trip, < 3 µs) that costs < 0.2 %
    of a 2.2 ms MiB. Each point is then a few MiB over its three repeats.
    """

    min_transfers = 1
    min_bytes = 1 << 20
    default_max_length = 1 << 20
    # 4 ms of bus time (~1.9 MB at 474.8 MB/s, ~4 s of wall time) bounds any point; short
    # transfers would otherwise spend minutes in the host model's per-transfer work.
    max_transfers = 1024
    max_bus_seconds = 0.004
    # 0.5 ms is four bus intervals: the device's whole-interval window has some to time.
    min_bus_seconds = 0.0005

    def __init__(self, platform: SimUsb3Platform) -> None:
        super().__init__(platform)
        # Known before the device is opened, so a description's directions and bus hold for a
        # transport not yet open; opening still checks the device's INFO says so.
        self.requests.protocol = usb3
        self.requests.max_packet_size = usb3.MAX_PACKET_SIZE
        # Known from the design before the simulator starts (a stream sweep of the disk is
        # refused before a build); opening still takes the device's own INFO.
        self.requests.features = DESIGN_FEATURES.get(platform.design)


def open_sim_usb3(target: TargetDescription) -> SimUsb3Transport:
    """Factory of the ``sim:usb3`` row of :mod:`busprobe.buses` (options already checked)."""
    return SimUsb3Transport(SimUsb3Platform(target))


class SimUsb3Platform(SimUsbPlatform):
    """A :class:`~busprobe.backends.usb.UsbPlatform` whose bus is the SuperSpeed simulation.

    Parameters
    ----------
    target : TargetDescription
        What ``sim:usb3?...`` selects: host-controller profile (``host``), burst cap
        (``burst``), the bus and the hops the simulation models.
    """

    #: busprobe's SuperSpeed gateware answers the vendor requests (no stock design here).
    vendor_requests = True
    clock_hz = usb3.CLOCK_HZ
    # The simulation moves >= 500 kB of bus data per wall second on a loaded 2-core machine
    # (1 MiB in ~2 s).
    stream_rate = 50e3

    def __init__(self, target: TargetDescription) -> None:
        super().__init__(target)
        self.burst = target.options["burst"]
        self.design = target.options["design"]
        self.primes = target.options["primes"]

    def alloc_streams(self, endpoints: Sequence[int], count: int) -> None:
        """As every simulated platform, and primed as the selector's ``primes`` says."""
        super().alloc_streams(endpoints, count)
        if self.primes == PIPE_PRIMES:
            self.prime_pipes(endpoints)

    def prime_pipes(self, endpoints: Sequence[int]) -> None:
        """The simulated xHCI primes these stream endpoints' pipes with the Prime Stream ID and
        refuses a selection it holds no transfer for with NoStream (USB 3.2 §8.12.1.4), instead
        of naming each stream; until their streams are allocated again (``primes=pipe`` asks
        for it at every allocation)."""
        self._cycle = self._call("prime_pipes", list(endpoints))

    def open(self) -> None:
        netlist = self.target.options["level"] == "netlist"
        if netlist and self.design != "busprobe":
            raise InvalidRequest(f"{self.target.text}: only the probe design has a netlist "
                                 f"simulation (level=netlist)")
        model = build_usb3_netlist_simulator() if netlist else build_usb3_simulator(self.design)
        self._start(model, TOPLEVEL, "busprobe.sim.usb3.server",
                    {ENV_PROFILE: self.host, ENV_BURST: str(self.burst)})
