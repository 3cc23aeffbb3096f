"""PCIe config-space access through sysfs, and the MPS/MRRS guard.

:class:`PcieCapability` decodes the PCI Express capability (Device Capabilities, Device Control,
Link Capabilities, Link Status) from the bytes of ``/sys/bus/pci/devices/X/config``.
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
import re
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from ...transport import DeviceNotFound, InvalidRequest, PermissionDenied

__all__ = [
    "PCI_CAP_ID_EXP", "BDF_RE", "PcieCapability", "PciFunction", "find_capability",
    "encode_size", "decode_size", "ConfigSpaceGuard", "GuardPlan",
]

log = logging.getLogger(__name__)

BDF_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")

PCI_STATUS = 0x06
PCI_STATUS_CAP_LIST = 0x10
PCI_CAPABILITY_LIST = 0x34
PCI_CAP_ID_EXP = 0x10
#: Config space a non-root reader sees through sysfs; capabilities usually lie beyond it.
UNPRIVILEGED_CONFIG_BYTES = 64

# Offsets inside the PCI Express capability (PCIe Base Spec 7.5.3).
EXP_DEVCAP = 0x04
EXP_DEVCTL = 0x08
EXP_LNKCAP = 0x0C
EXP_LNKSTA = 0x12
EXP_LNKSTA_DLLLA = 1 << 13  # Data Link Layer Link Active
DEVCTL_MPS_SHIFT, DEVCTL_MRRS_SHIFT = 5, 12
DEVCTL_MPS_MASK = 0x7 << DEVCTL_MPS_SHIFT
DEVCTL_MRRS_MASK = 0x7 << DEVCTL_MRRS_SHIFT

LINK_SPEEDS = {1: "gen1", 2: "gen2", 3: "gen3", 4: "gen4", 5: "gen5"}


def decode_size(code: int) -> int:
    """Payload/request size in bytes of a 3-bit DevCap/DevCtl code (0 -> 128 ... 5 -> 4096)."""
    return 128 << (code & 0x7)


def encode_size(size: int) -> int:
    """The 3-bit code of ``size``; :class:`InvalidRequest` unless a power of two in 128..4096."""
    if size not in (128, 256, 512, 1024, 2048, 4096):
        raise InvalidRequest(f"MPS/MRRS must be one of 128, 256, 512, 1024, 2048, 4096, not {size}")
    return size.bit_length() - 8


def find_capability(config: bytes, cap_id: int) -> int | None:
    """Offset of capability ``cap_id`` in the classic capability list of ``config``, or None."""
    if len(config) < 0x40 or not config[PCI_STATUS] & PCI_STATUS_CAP_LIST:
        return None
    offset, seen = config[PCI_CAPABILITY_LIST] & 0xFC, set()
    while offset and offset not in seen and offset + 2 <= len(config):
        seen.add(offset)  # a looping list in a broken device must not hang us
        if config[offset] == cap_id:
            return offset
        offset = config[offset + 1] & 0xFC
    return None


@dataclass(frozen=True)
class PcieCapability:
    """The fields of one function's PCI Express capability that busprobe uses.

    Attributes
    ----------
    offset : int
        Where the capability starts in config space.
    devcap, devctl, lnkcap, lnksta : int
        The raw registers.
    """

    offset: int
    devcap: int
    devctl: int
    lnkcap: int
    lnksta: int

    @classmethod
    def parse(cls, config: bytes) -> PcieCapability | None:
        off = find_capability(config, PCI_CAP_ID_EXP)
        if off is None or off + EXP_LNKSTA + 2 > len(config):
            return None

        def reg(at: int, size: int) -> int:
            return int.from_bytes(config[off + at:off + at + size], "little")

        return cls(off, reg(EXP_DEVCAP, 4), reg(EXP_DEVCTL, 2), reg(EXP_LNKCAP, 4),
                   reg(EXP_LNKSTA, 2))

    @property
    def mps_supported(self) -> int:
        return decode_size(self.devcap)

    @property
    def mps(self) -> int:
        return decode_size(self.devctl >> DEVCTL_MPS_SHIFT)

    @property
    def mrrs(self) -> int:
        return decode_size(self.devctl >> DEVCTL_MRRS_SHIFT)

    @property
    def link_speed_cap(self) -> str:
        return LINK_SPEEDS.get(self.lnkcap & 0xF, f"code{self.lnkcap & 0xF}")

    @property
    def link_width_cap(self) -> int:
        return (self.lnkcap >> 4) & 0x3F

    @property
    def link_speed(self) -> str:
        return LINK_SPEEDS.get(self.lnksta & 0xF, f"code{self.lnksta & 0xF}")

    @property
    def link_width(self) -> int:
        return (self.lnksta >> 4) & 0x3F

    @property
    def link_up(self) -> bool:
        """Negotiated width is non-zero (a down link reads x0; DLLLA is optional for endpoints)."""
        return self.link_width > 0

    def to_json(self) -> dict[str, object]:
        return {"mps_supported": self.mps_supported, "mps": self.mps, "mrrs": self.mrrs,
                "link_speed_cap": self.link_speed_cap, "link_width_cap": self.link_width_cap,
                "link_speed": self.link_speed, "link_width": self.link_width}


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
        encode_size(mps)
        if mps > limit:
            who = (f"{self.device.bdf} supports {dev.mps_supported}" + (
                f", upstream port {port_fn.bdf} supports {port.mps_supported}" if port else ""))
            notes.append(f"MPS {mps} capped at {limit} ({who})")
            mps = limit
        mrrs = dev.mrrs if self.wanted_mrrs is None else self.wanted_mrrs
        encode_size(mrrs)
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
                                encode_size(plan.mps) << DEVCTL_MPS_SHIFT))
        mask = value = 0
        if plan.mps != dev_cap.mps:
            mask |= DEVCTL_MPS_MASK
            value |= encode_size(plan.mps) << DEVCTL_MPS_SHIFT
        if plan.mrrs != dev_cap.mrrs:
            mask |= DEVCTL_MRRS_MASK
            value |= encode_size(plan.mrrs) << DEVCTL_MRRS_SHIFT
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
