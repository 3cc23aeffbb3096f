"""PCIe config-space access through sysfs, and the MPS/MRRS guard.

:class:`PciFunction` reads and writes ``/sys/bus/pci/devices/X/config``; the registers are decoded
by :mod:`busprobe.protocol.pci_config` (:class:`~busprobe.protocol.pci_config.PcieCapability`).
:class:`ConfigSpaceGuard` rewrites Max Payload Size / Max Read Request Size for a sweep and always
puts the original values back: on normal exit, on an exception, on Ctrl-C and on SIGTERM/SIGHUP.

Why a guard: MPS and MRRS are negotiated by the OS at enumeration and stored in each function's
Device Control register. A device may only send TLPs up to its own MPS, and the port above it must
accept that size, so MPS is written on the device *and* its upstream port, never above what either
advertises in Device Capabilities. MRRS only limits the requests the device issues, so it is
written on the device alone.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType

from ...protocol.pci_config import (
    BDF_RE,
    DEVCTL_MPS_MASK,
    DEVCTL_MPS_SHIFT,
    DEVCTL_MRRS_MASK,
    DEVCTL_MRRS_SHIFT,
    EXP_DEVCTL,
    UNPRIVILEGED_CONFIG_BYTES,
    PcieCapability,
    encode_size,
)
from ...transport import DeviceNotFound, InvalidRequest, PermissionDenied

__all__ = ["PciFunction", "ConfigSpaceGuard", "GuardPlan"]

log = logging.getLogger(__name__)


def _size_code(size: int) -> int:
    """:func:`encode_size`, with a bad size reported as the one-line :class:`InvalidRequest`."""
    try:
        return encode_size(size)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None


@dataclass(frozen=True)
class PciFunction:
    """One PCI function as sysfs shows it.

    Parameters
    ----------
    bdf : str
        ``DDDD:BB:DD.F``, lower case.
    sysfs_root : Path
        ``/sys`` on a real machine; a fixture tree in tests.
    """

    bdf: str
    sysfs_root: Path = Path("/sys")

    @property
    def path(self) -> Path:
        return self.sysfs_root / "bus" / "pci" / "devices" / self.bdf

    @property
    def config_path(self) -> Path:
        return self.path / "config"

    def exists(self) -> bool:
        return self.path.exists()

    def upstream(self) -> PciFunction | None:
        """The port above this function (the parent directory in /sys/devices), if it is one."""
        parent = self.path.resolve().parent.name
        return PciFunction(parent, self.sysfs_root) if BDF_RE.match(parent) else None

    def read_config(self) -> bytes:
        try:
            return self.config_path.read_bytes()
        except FileNotFoundError:
            raise DeviceNotFound(f"no PCI device {self.bdf} ({self.path} does not exist)") from None
        except PermissionError:
            raise PermissionDenied(f"cannot read {self.config_path}: permission denied") from None

    def capability(self) -> PcieCapability:
        """The PCI Express capability; one-line errors when it cannot be read."""
        config = self.read_config()
        cap = PcieCapability.parse(config)
        if cap is None:
            if len(config) <= UNPRIVILEGED_CONFIG_BYTES:
                raise PermissionDenied(
                    f"reading the PCIe capability of {self.bdf} needs root: the kernel shows "
                    f"other users only the first {UNPRIVILEGED_CONFIG_BYTES} bytes of config space")
            raise InvalidRequest(f"{self.bdf} has no PCI Express capability")
        return cap

    def write_devctl_fields(self, cap_offset: int, mask: int, value: int) -> int:
        """Read-modify-write the ``mask`` bits of Device Control; return the old register."""
        at = cap_offset + EXP_DEVCTL
        with open(self.config_path, "r+b", buffering=0) as f:
            f.seek(at)
            old = int.from_bytes(f.read(2), "little")
            f.seek(at)
            f.write(((old & ~mask) | (value & mask)).to_bytes(2, "little"))
        return old


def _check_taken(function: PciFunction, mask: int, value: int) -> None:
    """A field a function does not implement as writable keeps its value (QEMU's emulated
    functions hardwire MPS and MRRS, some hardware does too): the sweep would then be labelled
    with sizes that are not in force. Read Device Control back and refuse that in one line."""
    now = function.capability()
    if now.devctl & mask == value & mask:
        return
    wanted = replace(now, devctl=(now.devctl & ~mask) | (value & mask))
    raise InvalidRequest(
        f"{function.bdf} kept MPS {now.mps} / MRRS {now.mrrs} when MPS {wanted.mps} / MRRS "
        f"{wanted.mrrs} was written to Device Control: the field is read-only on this function "
        "(an emulated or hardwired device); the original values stay in force")


@dataclass(frozen=True)
class GuardPlan:
    """What :class:`ConfigSpaceGuard` will write: the effective MPS/MRRS and why."""

    mps: int
    mrrs: int
    mps_limit: int  # min(device, upstream port) Max_Payload_Size Supported
    notes: tuple[str, ...] = ()

    @property
    def capped(self) -> bool:
        return bool(self.notes)


def _default_is_root() -> bool:
    return os.geteuid() == 0


class ConfigSpaceGuard:
    """Set a device's MPS/MRRS for the duration of a ``with`` block, and always restore them.

    Parameters
    ----------
    bdf : str
        The device, ``DDDD:BB:DD.F``.
    mps, mrrs : int or None
        Wanted sizes; None keeps the value in force. MPS is capped (with a warning) at the
        smallest Max_Payload_Size Supported of the device and its upstream port.
    allow_write : bool
        The user passed ``--allow-config-write``. Without it any change is refused.
    sysfs_root : Path
        ``/sys``, or a fixture tree.
    is_root : callable
        Whether we run as root (injected by tests that write fixture files).

    The original fields are restored by :meth:`restore`, called from ``__exit__``, from an
    ``atexit`` hook, and (in the main thread) from SIGTERM/SIGHUP handlers that then raise
    :class:`KeyboardInterrupt`, so the caller's Ctrl-C path saves partial results as usual.
    """

    _SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self, bdf: str, *, mps: int | None = None, mrrs: int | None = None,
                 allow_write: bool = False, sysfs_root: Path | str = Path("/sys"),
                 is_root: Callable[[], bool] = _default_is_root) -> None:
        self.device = PciFunction(bdf.lower(), Path(sysfs_root))
        self.wanted_mps, self.wanted_mrrs = mps, mrrs
        self.allow_write = allow_write
        self._is_root = is_root
        # (function, capability offset, mask, original register) in write order.
        self._saved: list[tuple[PciFunction, int, int, int]] = []
        self._old_handlers: dict[int, object] = {}
        self._lock = threading.Lock()

    def plan(self) -> GuardPlan:
        """Effective values, without writing anything; raises if the request cannot be met."""
        if not self.device.exists():
            raise DeviceNotFound(f"no PCI device {self.device.bdf}")
        dev = self.device.capability()
        port_fn = self.device.upstream()
        port = port_fn.capability() if port_fn is not None else None
        limit = min(dev.mps_supported, port.mps_supported if port else dev.mps_supported)
        notes: list[str] = []
        mps = dev.mps if self.wanted_mps is None else self.wanted_mps
        _size_code(mps)
        if mps > limit:
            who = (f"{self.device.bdf} supports {dev.mps_supported}" + (
                f", upstream port {port_fn.bdf} supports {port.mps_supported}" if port else ""))
            notes.append(f"MPS {mps} capped at {limit} ({who})")
            mps = limit
        mrrs = dev.mrrs if self.wanted_mrrs is None else self.wanted_mrrs
        _size_code(mrrs)
        return GuardPlan(mps, mrrs, limit, tuple(notes))

    def _writes(self, plan: GuardPlan) -> list[tuple[PciFunction, int, int, int]]:
        """(function, cap offset, mask, value) for every field that must change."""
        dev_cap = self.device.capability()
        out = []
        if plan.mps != dev_cap.mps:
            port_fn = self.device.upstream()
            if port_fn is not None:  # the port above must accept what the device sends
                port_cap = port_fn.capability()
                if port_cap.mps != plan.mps:
                    out.append((port_fn, port_cap.offset, DEVCTL_MPS_MASK,
                                _size_code(plan.mps) << DEVCTL_MPS_SHIFT))
        mask = value = 0
        if plan.mps != dev_cap.mps:
            mask |= DEVCTL_MPS_MASK
            value |= _size_code(plan.mps) << DEVCTL_MPS_SHIFT
        if plan.mrrs != dev_cap.mrrs:
            mask |= DEVCTL_MRRS_MASK
            value |= _size_code(plan.mrrs) << DEVCTL_MRRS_SHIFT
        if mask:
            out.append((self.device, dev_cap.offset, mask, value))
        return out

    def __enter__(self) -> GuardPlan:
        plan = self.plan()
        for note in plan.notes:
            log.warning("%s", note)
        writes = self._writes(plan)
        if not writes:
            return plan
        what = f"MPS {plan.mps} / MRRS {plan.mrrs} on {self.device.bdf}"
        if not self.allow_write:
            raise InvalidRequest(f"setting {what} rewrites Device Control in config space: pass "
                                 "--allow-config-write (the original values are restored on exit)")
        if not self._is_root():
            raise PermissionDenied(f"setting {what} needs root (writes "
                                   f"{self.device.config_path})")
        self._install_handlers()
        try:
            for fn, offset, mask, value in writes:
                old = fn.write_devctl_fields(offset, mask, value)
                with self._lock:
                    self._saved.append((fn, offset, mask, old))
                log.info("%s: Device Control %#06x -> %#06x", fn.bdf, old,
                         (old & ~mask) | (value & mask))
                _check_taken(fn, mask, value)
        except BaseException:
            self.restore()
            raise
        return plan

    def __exit__(self, *exc: object) -> None:
        self.restore()

    def restore(self) -> None:
        """Put back every field written, newest first; safe to call more than once."""
        with self._lock:
            saved, self._saved = self._saved, []
        failures = []
        for fn, offset, mask, old in reversed(saved):
            try:
                fn.write_devctl_fields(offset, mask, old)
            except OSError as exc:  # keep restoring the others; report below
                failures.append(f"{fn.bdf}: {exc}")
        self._remove_handlers()
        if failures:
            raise PermissionDenied("could not restore Device Control: " + "; ".join(failures))

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.restore()
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    def _install_handlers(self) -> None:
        atexit.register(self.restore)
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread; atexit still holds
        for sig in self._SIGNALS:
            self._old_handlers[sig] = signal.signal(sig, self._on_signal)

    def _remove_handlers(self) -> None:
        atexit.unregister(self.restore)
        if threading.current_thread() is not threading.main_thread():
            return
        old, self._old_handlers = self._old_handlers, {}
        for sig, handler in old.items():
            signal.signal(sig, handler)
