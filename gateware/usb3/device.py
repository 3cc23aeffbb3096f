"""The busprobe USB 3.0 SuperSpeed device: bursting bulk IN and OUT, pattern, telemetry."""

from amaranth import Elaboratable, Module
from luna.gateware.usb.usb3.endpoints import USB3ControlEndpoint

from .core import SuperSpeedCore
from .descriptors import build_descriptors
from .request_handler import SuperSpeedProbeRequestHandler
from .telemetry import SuperSpeedTelemetry

__all__ = ["Usb3ProbeDevice"]


class Usb3ProbeDevice(Elaboratable):
    """USB 3.0 SuperSpeed bulk device that is never the bottleneck (issue 10).

    - EP0: LUNA's SuperSpeed control endpoint with its standard requests (descriptors from
      :func:`.descriptors.build_descriptors`: device, configuration with endpoint companions, BOS)
      and :class:`.request_handler.SuperSpeedProbeRequestHandler` (busprobe's vendor requests).
    - :class:`.telemetry.SuperSpeedTelemetry`: what the host did, in protocol order.

    Everything runs in the ``ss`` domain (125 MHz, 4 symbols per cycle); LUNA's PHY reset
    controller also uses ``sync``. The board or simulation top provides both.

    Attributes
    ----------
    core: SuperSpeedCore
        LUNA's SuperSpeed layers with busprobe's extensions (link state, for tops and debugging).

    Parameters
    ----------
    phy: PIPEInterface
        4-symbol PIPE interface in the ``ss`` domain.
    sync_frequency: float
        Frequency of the ``sync`` domain.
    """

    def __init__(self, *, phy, sync_frequency=125e6):
        self.core = SuperSpeedCore(phy=phy, sync_frequency=sync_frequency)

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core

        control = USB3ControlEndpoint()
        control.add_standard_request_handlers(build_descriptors())
        requests = SuperSpeedProbeRequestHandler()
        control.add_request_handler(requests)
        core.add_endpoint(control)

        m.submodules.telemetry = telemetry = SuperSpeedTelemetry()
        m.d.comb += [
            telemetry.events.itp.eq(core.itp_received),
            telemetry.events.header_credit_stall.eq(core.header_credit_stall),
            telemetry.clear.eq(requests.clear_telemetry),
            requests.telemetry.eq(telemetry.words),
        ]
        return m
