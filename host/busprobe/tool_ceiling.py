"""The tool's own ceiling: what the host path sustains on this machine with no device in it.

Every host-timed figure is also bounded by how fast busprobe itself submits and reaps. This
module measures that bound, per direction, transfer length and queue depth, by running the real
host code against a device that costs nothing:

* ``libusb`` (a board on USB): the sweep's queued stream over ``null_libusb.c``, a libusb whose
  transfers complete, all bytes moved, in the next event-handling call: the native stream
  (:mod:`~.backends.usb.native_stream`, what a queued stream runs on a board) in this process,
  or with ``native=False`` the Python loop — :func:`~.backends.usb.transfers.run_plan` of a
  :class:`~.backends.usb.plans.QueuedStream` on a
  :class:`~.backends.usb.libusb_queue.LibusbTransferQueue` of python-libusb1 objects, as on a
  board without the native code — in a child process (python-libusb1 loads one libusb per
  process). Included: the native loop, or busprobe's queue and plan with python-libusb1's
  ctypes calls and callback trampoline; libusb's event-handling call. Not included: the kernel
  (usbfs' submit and reap ioctls, URBs, the host controller driver and its interrupt, typically
  a few µs a transfer), the device and the bus.
* ``vfio`` (a board on PCIe): :class:`~.backends.pcie.driver.PcieDmaDriver` streaming with the
  sweep's own pattern source and checker, over a DMA engine that consumes every descriptor and
  moves every byte the moment it is queued (registers in an anonymous mapping accessed as the
  VFIO BAR is, an MSI that is always there). Included: the driver, its register accesses'
  Python cost, generating read data and checking write data (the sweep does both inside its
  window), a memory copy per write transfer standing for the device's DMA. Not included: the
  MMIO round trips themselves (a real read of a register waits for the link), the IOMMU, the
  interrupt's delivery.

A run lasts about :data:`RUN_SECONDS` of wall time and the best of :data:`RUNS` is kept (other
work on a shared machine only slows a run down). A simulated target has no tool ceiling: the
simulation's clock stands still while the host computes; nor has a host under emulation (QEMU),
whose every figure is the emulator's.
"""

from __future__ import annotations

import ctypes
import functools
import json
import math
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass

from .emulation import emulated_host
from .protocol.names import Direction

__all__ = ["ToolFigure", "libusb_figure", "vfio_figure", "tool_ceiling", "PATHS", "RUNS",
           "RUN_SECONDS"]

#: The host paths a transport can name (``Transport.tool_path``).
PATHS = ("libusb", "vfio")
RUNS = 3
RUN_SECONDS = 0.15
#: Most bytes one run's buffers may take (the native stream holds a whole run's data).
MAX_RUN_BYTES = 64 << 20


@dataclass(frozen=True)
class ToolFigure:
    """What the host path sustained with a device that costs nothing.

    Attributes
    ----------
    path : str
        ``libusb-native``, ``libusb-python`` or ``vfio``.
    direction : str
    length, queue_depth : int
    completions_per_s : float
        Transfers completed per second (best run).
    bytes_per_s : float
        ``completions_per_s × length``: the tool's ceiling for this point.
    transfers : int
        Transfers per run.
    """

    path: str
    direction: str
    length: int
    queue_depth: int
    completions_per_s: float
    bytes_per_s: float
    transfers: int

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _best(run: Callable[[int], float], length: int) -> tuple[float, int]:
    """``(completions/s, transfers)``: runs of ``run(count) -> seconds`` sized to
    :data:`RUN_SECONDS`, best of :data:`RUNS`."""
    cap = max(1, MAX_RUN_BYTES // max(length, 1))
    count = min(256, cap)
    seconds = run(count)
    count = max(1, min(cap, math.ceil(count * RUN_SECONDS / max(seconds, 1e-6))))
    best = max(count / max(run(count), 1e-9) for _ in range(RUNS))
    return best, count


@functools.cache
def _null_libusb() -> ctypes.CDLL:
    from .backends.usb.libusb import libusb_library_path
    from .backends.usb.native import build

    return ctypes.CDLL(str(build("null_libusb", link=libusb_library_path())))


def _queue_run(direction: str, length: int, queue_depth: int, count: int,
               native: bool) -> float:
    """One run of the board's own code path — :func:`run_plan` of a :class:`QueuedStream` on a
    :class:`LibusbTransferQueue` of python-libusb1 objects — over the null libusb, in native
    code or the Python loop (call in a process of its own: it loads that libusb for
    python-libusb1)."""
    import usb1
    from usb1 import libusb1

    from .backends.usb.libusb_queue import LibusbTransferQueue
    from .backends.usb.plans import QueuedStream
    from .backends.usb.transfers import run_plan

    usb1.loadLibrary(_null_libusb())
    context = usb1.USBContext(with_device_discovery=False)
    context.open()
    handle = usb1.USBDeviceHandle(context, libusb1.libusb_device_handle_p(), None,
                                  context._getFinalizer, False)
    queue = LibusbTransferQueue(usb1, context, handle, name="null", native=native)
    endpoint = 0x81 if direction == Direction.IN else 0x01
    outgoing = None if direction == Direction.IN else [bytes(length)] * count
    plan = QueuedStream(endpoint, length, count, queue_depth, outgoing=outgoing, what="null")
    try:
        start, end = run_plan(queue, plan, what="null", silence=2.0)
    finally:
        queue.close()
    if native and queue.native_runs == 0:
        raise RuntimeError("the native stream could not be built here")
    return end - start


def _native_run(direction: str, length: int, queue_depth: int, count: int) -> float:
    """One run of the native stream itself over the null libusb, in this process (the stream
    takes the library by handle, so python-libusb1's own libusb is left alone)."""
    from .backends.usb.native_stream import NativeStream
    from .backends.usb.plans import QueuedStream

    stream = NativeStream(_null_libusb())
    endpoint = 0x81 if direction == Direction.IN else 0x01
    outgoing = None if direction == Direction.IN else [bytes(length)] * count
    plan = QueuedStream(endpoint, length, count, queue_depth, outgoing=outgoing, what="null")
    start, end = stream.run(None, None, plan, silence=2.0)
    return end - start


def libusb_figure(direction: str, length: int, queue_depth: int, *,
                  native: bool = True) -> ToolFigure:
    """The libusb path's figure (see module): the native stream in this process, or with
    ``native=False`` the Python loop through python-libusb1 in a child process."""
    if native:
        try:
            rate, count = _best(lambda n: _native_run(direction, length, queue_depth, n),
                                length)
        except OSError as exc:  # the null libusb or the stream could not be built or loaded
            raise RuntimeError(f"the native stream could not be measured: {exc}") from None
        return ToolFigure("libusb-native", direction, length, queue_depth, rate,
                          rate * length, count)
    done = subprocess.run([sys.executable, "-m", __name__, "libusb", "python", direction,
                           str(length), str(queue_depth)], capture_output=True, text=True,
                          timeout=300, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the libusb path (python) could not be measured: "
                           f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    return ToolFigure(**json.loads(done.stdout))


def vfio_figure(direction: str, length: int, queue_depth: int) -> ToolFigure:
    """The VFIO path's figure (see module and :mod:`.tool_ceiling_pcie`)."""
    from .tool_ceiling_pcie import vfio_run

    rate, count = _best(lambda n: vfio_run(direction, length, queue_depth, n), length)
    return ToolFigure("vfio", direction, length, queue_depth, rate, rate * length, count)


@functools.cache
def tool_ceiling(path: str | None, direction: str, length: int,
                 queue_depth: int) -> ToolFigure | None:
    """The figure of transport path ``path`` for a point (measured once per process), or None
    for a path with no figure (a simulation) or a direction it does not measure."""
    if emulated_host() is not None:
        return None
    if path == "libusb" and direction in (Direction.IN, Direction.OUT):
        try:
            return libusb_figure(direction, length, queue_depth)
        except RuntimeError:
            # No native stream here (no compiler): the queue runs the Python loop, so that is
            # the path whose ceiling counts.
            return libusb_figure(direction, length, queue_depth, native=False)
    if path == "vfio" and direction in (Direction.WRITE, Direction.READ):
        return vfio_figure(direction, length, queue_depth)
    return None


def _main(argv: list[str]) -> int:
    path, kind, direction, length, depth = argv[0], argv[1], argv[2], int(argv[3]), int(argv[4])
    if (path, kind) != ("libusb", "python"):
        raise SystemExit(f"unknown path {path} {kind}")
    rate, count = _best(lambda n: _queue_run(direction, length, depth, n, False), length)
    figure = ToolFigure(f"libusb-{kind}", direction, length, depth, rate, rate * length, count)
    sys.stdout.write(json.dumps(figure.to_json()))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
