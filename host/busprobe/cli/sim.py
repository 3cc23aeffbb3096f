"""``busprobe sim``: the simulated gateware as a device for other programs.

``busprobe sim serve --device sim:usb2 --usbredir PORT|HOST:PORT|PATH`` runs the USB 2.0 gateware
in Verilator behind the ULPI host model and exports it over usbredir: a virtual machine
(``qemu-system-x86_64 -chardev socket,id=r,host=HOST,port=PORT -device qemu-xhci
-device usb-redir,chardev=r``) then enumerates the busprobe device under its own kernel and any
program there, busprobe's libusb backend included, drives the simulated gateware. It serves one
guest at a time, the next after a disconnect, until Ctrl-C or SIGTERM (exit 0, simulator
stopped) or until the simulation dies (one line, exit 2).
"""

from __future__ import annotations

import argparse
import ipaddress
import sys

from .. import buses
from ..signals import Terminated
from ..transport import DeviceGone

__all__ = ["register", "run_serve"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("sim", help="export a simulated device (usbredir)",
                            description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="sim_command", metavar="ACTION", required=True)
    serve = actions.add_parser("serve", help="serve the simulated USB device over usbredir",
                               description="Simulate the device and serve usbredir guests, one "
                                           "at a time (the device is reset between two), "
                                           "until Ctrl-C or SIGTERM.")
    serve.add_argument("--device", default="sim:usb2", metavar="SEL",
                       help=f"simulated USB target ({buses.SIM_SCHEME}:"
                            f"{buses.USB2_HS.sim_target}[?{buses.USB2_HS.sim_syntax}])")
    serve.add_argument("--usbredir", required=True, metavar="ADDR",
                       help="PORT (on 127.0.0.1, this computer only), HOST:PORT to listen on "
                            "another address (port 0: any free port), or a Unix socket path")
    serve.set_defaults(func=run_serve)


def _exposed(address: str) -> bool:
    """Whether a TCP ``address`` listens beyond this computer (not a loopback address)."""
    if "/" in address or ":" not in address:
        return False
    host = address.rpartition(":")[0].strip("[]")
    if not host or host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True  # a host name: whatever it resolves to, it was asked for by name


def run_serve(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C or SIGTERM (exit 0) or until the simulation dies (one line, exit 2)."""
    try:
        from ..sim.export.serve import serve_usbredir
    except ImportError as exc:
        raise ValueError(f"busprobe sim needs the simulation: {buses.SIM_EXTRA_HINT} "
                         f"({exc})") from None

    def say(line: str) -> None:
        print(f"busprobe: {line}", file=sys.stderr, flush=True)

    def ready(line: str) -> None:
        say(line)
        if _exposed(args.usbredir):
            say(f"note: {args.usbredir} is reachable beyond this computer: whoever reaches it "
                "can drive the device (give a PORT alone for 127.0.0.1)")

    services: list = []
    try:
        ended = serve_usbredir(args.device, args.usbredir, on_ready=ready, on_event=say,
                               service=services)
    except KeyboardInterrupt as exc:
        how = exc.args[0] if isinstance(exc, Terminated) else "interrupted (Ctrl-C)"
        served = services[0].served if services else 0
        say(f"stopped: {how}; served {served} guest{'s' if served != 1 else ''}, simulator "
            "stopped")
        return 0
    raise DeviceGone(ended)
