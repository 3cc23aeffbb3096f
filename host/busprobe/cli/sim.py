"""``busprobe sim``: the simulated gateware as a device for other programs.

``busprobe sim serve --device sim:usb2 --usbredir HOST:PORT|PATH`` runs the USB 2.0 gateware in
Verilator behind the ULPI host model and exports it over usbredir: a virtual machine
(``qemu-system-x86_64 -chardev socket,id=r,host=HOST,port=PORT -device qemu-xhci
-device usb-redir,chardev=r``) then enumerates the busprobe device under its own kernel and any
program there, busprobe's libusb backend included, drives the simulated gateware.
"""

from __future__ import annotations

import argparse
import sys

from .. import buses
from ..transport import DeviceGone

__all__ = ["register", "run_serve"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("sim", help="export a simulated device (usbredir)",
                            description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="sim_command", metavar="ACTION", required=True)
    serve = actions.add_parser("serve", help="serve the simulated USB device over usbredir",
                               description="Simulate the device and serve the first usbredir "
                                           "guest that connects, until it disconnects.")
    serve.add_argument("--device", default="sim:usb2", metavar="SEL",
                       help=f"simulated USB target ({buses.SIM_SCHEME}:"
                            f"{buses.USB2_HS.sim_target}[?{buses.USB2_HS.sim_syntax}])")
    serve.add_argument("--usbredir", required=True, metavar="ADDR",
                       help="HOST:PORT to listen on (port 0: any free port) or a Unix socket "
                            "path")
    serve.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    """Serve until the guest disconnects (exit 0) or the simulation dies (one line, exit 2)."""
    try:
        from ..sim.export.serve import serve_usbredir
    except ImportError as exc:
        raise ValueError(f"busprobe sim needs the simulation: {buses.SIM_EXTRA_HINT} "
                         f"({exc})") from None

    def ready(line: str) -> None:
        print(f"busprobe: {line}", file=sys.stderr, flush=True)

    ended = serve_usbredir(args.device, args.usbredir, on_ready=ready)
    if ended != "closed":
        raise DeviceGone(ended)
    print("busprobe: the usbredir guest disconnected", file=sys.stderr)
    return 0
