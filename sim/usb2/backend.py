"""``sim:usb2``: the busprobe USB2 gateware in Verilator, as a :class:`UsbPlatform`.

:func:`open_sim_usb2` returns the same :class:`~busprobe.backends.usb.UsbDeviceTransport` a
board gets, over :class:`SimUsb2Platform`: each control transfer and bulk stream crosses to the
simulator (:mod:`busprobe.sim.usb2.server`, through :class:`~busprobe.sim.simulator.SimServer`)
and is carried out there by the host-controller model through the ULPI PHY model. Every IN byte
comes back to this process for the sweep's pattern check; :meth:`SimUsb2Platform.now` is
simulated time.

Selector options: ``host=ideal|ehci|xhci|FILE.toml`` (host-controller profile, default
``ideal``), ``design=busprobe|full|stock|storage`` (the lean board default, the ``usb2-full`` design
with BOT and every counter, the stock LUNA reference design, for the benchmark, or the
``usb2-storage`` null disk).
"""

from __future__ import annotations

from typing import Any

from busprobe.backends.usb import UsbDeviceTransport
from busprobe.protocol import usb2
from busprobe.selectors import parse_selector
from busprobe.stdout_guard import stdout_to_stderr
from busprobe.targets import TargetDescription
from busprobe.targets.sim_usb2 import DESIGN_FEATURES, sim_usb2_hops
from busprobe.transport import InvalidRequest

from ..netlist.usb2 import build_usb2_netlist_simulator
from ..simulator import SimServer
from ..target_group import SimTargetGroup
from ..usb_platform import SimUsbPlatform
from .server import ENV_ATTACH, ENV_DEVICES, ENV_PROFILE
from .simulator_build import TOPLEVEL, build_usb2_simulator

__all__ = ["open_sim_usb2", "open_sim_usb2_group", "SimUsb2Platform", "SimUsb2Transport",
           "SimUsb2Group"]


class SimUsb2Transport(UsbDeviceTransport):
    """The USB device transport over the simulated gateware, with the simulation's amortisation.

    The simulation is deterministic (no OS jitter to average out) and runs at ~250-320 k
    cycles/s (~3 ms of bus time per wall second), so 2 transfers and 256 KiB amortise start-up:
    with 1 MiB transfers the first submit's offset into a microframe costs < 0.4 % of 2 MiB
    (measured >= 99.5 % of 53.248 MB/s). Every profile's curve is flat well before 256 KiB at
    queue depth 4; the hardware ladder's 4 MiB top would cost minutes of simulation per point.
    """

    min_transfers = 2
    min_bytes = 256 << 10
    default_max_length = 256 << 10
    # 10 ms of bus time (80 microframes, ~3 s of wall time) is enough for any point's figure to
    # settle; a 1-byte or a queue-depth-1 EHCI point would otherwise run for minutes.
    max_transfers = 1024
    max_bus_seconds = 0.01
    # 1 ms is 8 microframes: the device's whole-microframe window always has some to time.
    min_bus_seconds = 0.001

    def __init__(self, platform: SimUsb2Platform) -> None:
        super().__init__(platform)
        # Known from the design before the simulator starts, so `--protocol bot` on the lean
        # design is refused before a build; opening still takes the device's own INFO.
        self.requests.features = DESIGN_FEATURES.get(platform.design)

    @property
    def bot_fix(self) -> str:  # type: ignore[override]
        """The same selector with the design that has the BOT framer."""
        selector = parse_selector(self.selector)
        options = {key: value for key, value in selector.options.items() if key != "design"}
        options["design"] = "full"
        return (f"use {selector.scheme}:{selector.target}?"
                + "&".join(f"{key}={value}" for key, value in options.items()))


def open_sim_usb2(target: TargetDescription) -> SimUsb2Transport:
    """Factory of the ``sim:usb2`` row of :mod:`busprobe.buses` (options already checked)."""
    if target.options.get("devices", 1) > 1:
        raise InvalidRequest(f"{target.text}: several devices are several targets; "
                             "busprobe sweep runs them (alone, then together)")
    return SimUsb2Transport(SimUsb2Platform(target))


class SimUsb2Platform(SimUsbPlatform):
    """A :class:`~busprobe.backends.usb.UsbPlatform` whose bus is the simulation.

    Parameters
    ----------
    target : TargetDescription
        What ``sim:usb2?...`` selects: host-controller profile (``host``), gateware under test
        (``design``: ``busprobe``, or ``stock``, LUNA's reference endpoints without vendor
        requests), the bus and the hops the simulation models.
    """

    clock_hz = usb2.CLOCK_HZ
    # The simulation moves >= 150 kB of bus data per wall second on a loaded 2-core machine.
    stream_rate = 20e3

    def __init__(self, target: TargetDescription, *, group: SimUsb2Group | None = None,
                 channel: int | None = None) -> None:
        super().__init__(target, channel)
        self.design = target.options["design"]
        self.vendor_requests = self.design != "stock"
        self.group = group

    def open(self) -> None:
        if self.group is not None:  # the group started the simulator; this is one channel
            self.server = self.group.server
            self._cycle = self._server().info["cycle"]
            return
        if self.target.options["level"] == "netlist":
            model = build_usb2_netlist_simulator(self.design)
        else:
            model = build_usb2_simulator(self.design)
        self._start(model, TOPLEVEL, "busprobe.sim.usb2.server", {ENV_PROFILE: self.host})

    def close(self) -> None:
        if self.group is not None:  # the group stops the simulator
            self.server = None
            return
        super().close()

    def topology(self) -> list[dict[str, Any]]:
        if self.channel is None:
            return super().topology()
        return [hop.to_json() for hop in sim_usb2_hops(self.target.options, self.channel)]


class SimUsb2Group(SimTargetGroup):
    """``sim:usb2?devices=N&attach=hub|ports``: N busprobe devices in one simulation, each a
    target of its own (:class:`SimUsb2Transport` on its own RPC channel).

    Its attributes are :class:`~busprobe.sim.target_group.SimTargetGroup`'s, target i being
    device i.
    """

    def __init__(self, target: TargetDescription) -> None:
        if target.options["level"] != "rtl":
            raise InvalidRequest(f"{target.text}: several devices are simulated from the "
                                 "design's RTL only (level=rtl)")
        self.target = target
        self.devices = int(target.options["devices"])
        super().__init__(target.text, [
            SimUsb2Transport(SimUsb2Platform(target, group=self, channel=i))
            for i in range(self.devices)])

    def open(self) -> None:
        from .multi_top import MULTI_TOPLEVEL, build_usb2_multi_simulator

        options = self.target.options
        with stdout_to_stderr():
            model = build_usb2_multi_simulator(self.devices, options["design"])
        self.serve(SimServer(model, MULTI_TOPLEVEL, "busprobe.sim.usb2.server", name=self.name,
                             env={ENV_PROFILE: options["host"],
                                  ENV_DEVICES: str(self.devices),
                                  ENV_ATTACH: options["attach"]}))


def open_sim_usb2_group(target: TargetDescription) -> SimUsb2Group:
    """The devices of ``sim:usb2?devices=N`` (not yet open)."""
    return SimUsb2Group(target)
