"""Device selectors: ``usb:VID:PID[#SERIAL]``, ``pcie:DDDD:BB:DD.F``, ``sim:BUS[?k=v&...]``.

Backends register a factory for their scheme (and, for ``sim``, their bus name); the CLI opens a
transport with :func:`open_transport` and never imports a backend itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from .transport import InvalidRequest, Transport

__all__ = ["Selector", "parse_selector", "open_transport", "BACKENDS", "SIM_TARGETS"]


@dataclass(frozen=True)
class Selector:
    text: str
    scheme: str  # usb, pcie, sim
    target: str  # "1209:0001#SER", "0000:01:00.0", "usb2"
    options: dict[str, str] = field(default_factory=dict)


def parse_selector(text: str) -> Selector:
    scheme, sep, rest = text.partition(":")
    if not sep or scheme not in ("usb", "pcie", "sim") or not rest:
        raise InvalidRequest(f"bad device selector {text!r}: expected usb:VID:PID[#SERIAL], "
                             "pcie:DDDD:BB:DD.F or sim:usb2|pcie[?key=value&...]")
    target, _, query = rest.partition("?")
    try:
        options = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)))
    except ValueError:
        raise InvalidRequest(f"bad options {query!r} in selector {text!r}") from None
    return Selector(text, scheme, target, options)


#: scheme -> "module:factory"; the factory takes a :class:`Selector` and returns a Transport.
BACKENDS: dict[str, str] = {
    "usb": "busprobe.backends.usb:open_usb",
    "pcie": "busprobe.backends.pcie:open_pcie",
}
#: sim bus name -> "module:factory" (simulation extras needed).
SIM_TARGETS: dict[str, str] = {
    "usb2": "busprobe.sim.usb2.backend:open_sim_usb2",
    "pcie": "busprobe.sim.pcie.backend:open_sim_pcie",
}


def _load(spec: str) -> Callable[[Selector], Transport]:
    module, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise InvalidRequest(f"{module} is not available ({exc}); "
                             "install busprobe with the [sim] extra (make demo does)") from None


def open_transport(text: str) -> Transport:
    """Parse ``text`` and build (not yet open) the transport it selects."""
    sel = parse_selector(text)
    if sel.scheme == "sim":
        if sel.target not in SIM_TARGETS:
            raise InvalidRequest(f"no simulated target {sel.target!r} "
                                 f"(available: {', '.join(sorted(SIM_TARGETS))})")
        return _load(SIM_TARGETS[sel.target])(sel)
    return _load(BACKENDS[sel.scheme])(sel)
