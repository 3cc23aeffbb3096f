"""busprobe's real PCIe backend classes against the guest kernel (run there by pcie_checks.sh).

``written BDF``
    :class:`ConfigSpaceGuard` (what ``--allow-config-write`` enables) asked for an MRRS other
    than the one in force: it writes Device Control through sysfs and reads it back.
``capped BDF [hold]``
    The guard asked for an MPS above what the endpoint and its upstream port support: the plan
    is capped at both ends' support. It then leaves the ``with`` block at once (a normal exit)
    or, with ``hold``, waits for SIGINT (Ctrl-C) or SIGTERM.
``hops FILE NAME``
    MPS/MRRS of every hop in ``busprobe topology --json`` output, one line each.
``vfio BDF``
    Opens the function through :mod:`busprobe.backends.pcie.vfio` (group, container, device,
    BAR0 mapped) and maps a DMA buffer into its IOMMU domain.

Each fact is one ``BUSPROBE-VM`` line. A sweep cannot reach the guard on this endpoint: it opens
the device first, and the endpoint is not a busprobe device (which ``busprobe sweep`` shows).
"""

from __future__ import annotations

import json
import signal
import sys
import time

from busprobe.backends.pcie.config import ConfigSpaceGuard, PciFunction
from busprobe.backends.pcie.vfio import VfioDevice, preflight
from busprobe.signals import interruptible
from busprobe.transport import TransportError

MARK = "BUSPROBE-VM"


def say(text: str) -> None:
    print(f"{MARK} {text}", flush=True)


def devctl(function: PciFunction) -> str:
    cap = function.capability()
    return f"{function.bdf} mps={cap.mps} mrrs={cap.mrrs} mps_supported={cap.mps_supported}"


def written(bdf: str) -> None:
    cap = PciFunction(bdf).capability()
    mrrs = 256 if cap.mrrs != 256 else 512
    try:
        with ConfigSpaceGuard(bdf, mrrs=mrrs, allow_write=True):
            say(f"guard-written mrrs={mrrs} took: {devctl(PciFunction(bdf))}")
    except TransportError as exc:
        say(f"guard-written mrrs={mrrs} refused: {exc}")


def capped(bdf: str, hold: bool) -> None:
    device = PciFunction(bdf)
    # A background job of a non-interactive shell starts with SIGINT ignored; Ctrl-C must count.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with interruptible():
        try:
            with ConfigSpaceGuard(bdf, mps=4096, allow_write=True) as plan:
                say(f"guard-entered asked mps=4096 set mps={plan.mps} ({'; '.join(plan.notes)})")
                say(f"guard-endpoint {devctl(device)}")
                port = device.upstream()
                if port is not None:
                    say(f"guard-port {devctl(port)}")
                while hold:  # until a signal ends the wait
                    time.sleep(1)
            say("guard-exit normal")
        except KeyboardInterrupt as exc:
            say(f"guard-exit interrupted {str(exc) or 'SIGINT'}")


def hops(path: str, name: str) -> None:
    for hop in json.loads(open(path).read()):
        say(f"{name} {hop['name']} {hop['kind']} mps={hop['mps']} mrrs={hop['mrrs']}")


def vfio(bdf: str) -> None:
    device = VfioDevice(preflight(bdf))
    try:
        assert device.bar is not None
        say(f"vfio-bar0 size={device.bar.size} word0={device.bar.read32(0):#010x}")
        buffer = device.alloc(1 << 16)
        buffer.write(0, b"busprobe")
        say(f"vfio-dma iova={buffer.bus_address:#x} size={buffer.size} "
            f"readback={buffer.read(0, 8).decode()}")
        device.free(buffer)
    finally:
        device.close()


if __name__ == "__main__":
    action, *rest = sys.argv[1:]
    if action == "capped":
        capped(rest[0], hold=rest[1:] == ["hold"])
    elif action == "hops":
        hops(*rest)
    else:
        {"written": written, "vfio": vfio}[action](rest[0])
