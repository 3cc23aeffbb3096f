"""Every clock of a build timed at its own frequency: the check behind "timing met".

nextpnr times a clock net it has no constraint for at its default (12 MHz), and a clock with no
register-to-register path not at all: either way a build would "meet timing" while checking
nothing. So a build declares its clocks (domain -> MHz) and which of them must be timed, and its
nextpnr report is held to that before its Fmax counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .result import BuildError, BuildResult

__all__ = ["check_clocks"]

#: How far a reported constraint may be from the declared frequency (nextpnr rounds derived
#: PLL constraints).
_TOLERANCE = 0.01


def check_clocks(result: BuildResult, *, declared: Mapping[str, float],
                 required: Iterable[str]) -> None:
    """Raise :class:`BuildError` unless every clock in ``result`` is a declared domain timed at
    its declared frequency and every ``required`` domain is among them."""
    where = f"{result.design} on {result.board}"
    for clock in result.clocks:
        expected = declared.get(clock.domain)
        if expected is None:
            raise BuildError(
                f"{where}: nextpnr times clock net {clock.net} at {clock.constraint_mhz:.2f} MHz, "
                f"and no clock of the design is that net (declared: "
                + ", ".join(f"{domain} {mhz:g} MHz" for domain, mhz in declared.items()) + ")")
        if abs(clock.constraint_mhz - expected) > _TOLERANCE * expected:
            raise BuildError(f"{where}: the {clock.domain} domain was timed at "
                             f"{clock.constraint_mhz:.2f} MHz, not its {expected:.2f} MHz: "
                             "clock constraint lost")
    for domain in required:
        if not any(clock.domain == domain for clock in result.clocks):
            nets = ", ".join(clock.net for clock in result.clocks) or "none"
            raise BuildError(f"{where}: nextpnr reports no timing for the {domain} domain "
                             f"(clocks: {nets})")
