"""What a device selector selects, parsed and checked once: :func:`describe`.

``busprobe model``, ``busprobe topology`` and ``busprobe sweep`` all start from
:func:`describe`, so a selector means the same to each of them and a bad one is refused by each
with the same line, before anything is built or opened. :func:`open_transport` hands the
description to the bus's transport factory (:mod:`busprobe.buses`), which builds its device from
it: a simulated device's bus and hops are the description's.

Selectors: ``usb:VID:PID[#SERIAL]`` and ``pcie:DDDD:BB:DD.F`` (:mod:`.real`), ``sim:usb2``
(:mod:`.sim_usb2`), ``sim:pcie`` (:mod:`.sim_pcie`).
"""

from __future__ import annotations

from pathlib import Path

from .. import buses
from ..protocol.pci_config import SIZES
from ..selectors import parse_selector
from ..transport import InvalidRequest, Transport
from .description import TargetDescription

__all__ = ["TargetDescription", "describe", "open_transport", "check_setting"]


def describe(text: str, *, sysfs_root: str | Path | None = "/sys") -> TargetDescription:
    """The description of selector ``text``, without opening or building anything.

    Parameters
    ----------
    text : str
        A device selector.
    sysfs_root : path or None
        Where a real device's bus and hops are read; ``None`` describes a real device by its
        selector alone (``bus`` None, no hops). Simulated targets never read it.

    Raises
    ------
    InvalidRequest
        Malformed selector, unknown target, option or value (one line naming it).
    DeviceNotFound
        A real device sysfs does not show.
    """
    sel = parse_selector(text)
    if sel.scheme == buses.SIM_SCHEME:
        spec = buses.by_sim_target(sel.target)
        describer = buses.load(spec.describe_sim)
    else:
        spec = buses.by_scheme(sel.scheme)
        describer = buses.load(spec.describe_real)
    return describer(sel, spec, sysfs_root)


def open_transport(target: TargetDescription | str) -> Transport:
    """Build (not yet open) the transport of ``target``; a selector text is described first
    (real devices without sysfs: the opened device says what its bus is)."""
    if isinstance(target, str):
        target = describe(target, sysfs_root=None)
    if target.simulated:
        factory = buses.load(target.spec.sim_backend, buses.SIM_EXTRA_HINT)
    else:
        factory = buses.load(target.spec.real_backend)
    return factory(target)


def check_setting(target: TargetDescription, key: str, value: int) -> int:
    """``value`` if ``target`` can be set to ``key`` (``mps``/``mrrs``) = ``value`` as far as the
    PCIe specification and the design allow; :class:`InvalidRequest` (one line) otherwise,
    before any model is built. What a real device's capability register allows is checked
    when it is opened."""
    if target.simulated and target.spec is buses.PCIE:
        from .sim_pcie import check_setting as sim_check  # the simulated design's rules

        return sim_check(key, value)
    if value not in SIZES:  # PCIe Base 3.0 §7.8.4: 128 to 4096 bytes, powers of two
        raise InvalidRequest(f"--{key} {value}: PCIe allows {', '.join(map(str, SIZES))} "
                             "bytes")
    return value
