"""Closed-form throughput ceilings: what a bus configuration allows, with the derivation shown.

``ceiling_for(bus, direction)`` is the entry point the sweep engine, the simulations and the
reports use; each bus's formula lives in its own module (:mod:`.usb2`, :mod:`.pcie`, named by
the bus registry :mod:`busprobe.buses`) and is printed by ``busprobe model --formula``.
:mod:`.usb3` is the SuperSpeed formula, kept and tested but not a registered bus until USB 3.0
is built.
"""

from .ceiling import DIRECTIONS, Ceiling, ceiling_for, link_ceiling

__all__ = ["Ceiling", "ceiling_for", "link_ceiling", "DIRECTIONS"]
