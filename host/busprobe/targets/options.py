"""Checking selector options: one rule per option, one line naming the option when it is broken.

A target lists its options as :class:`Option` rules; :func:`parse_options` refuses keys it does
not list and values a rule refuses, and fills in the defaults. Messages read
``sim:pcie option gen='9': gen must be 1, 2 or 3`` and
``sim:pcie: unknown option(s) bogus (it takes gen, width, ...)``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..transport import InvalidRequest

__all__ = ["Option", "Refused", "parse_options", "choice", "one_of", "number", "loadable",
           "check_value"]

_INTEGER = re.compile(r"^[0-9]+$")


class Refused(ValueError):
    """Raised by an option's parser to say why, instead of the option's ``allowed`` text."""


@dataclass(frozen=True)
class Option:
    """One selector option.

    Attributes
    ----------
    key : str
        Its name in ``?key=value``.
    default : object
        The value when the selector does not give it.
    parse : callable
        ``text -> value``; raises ``ValueError`` for a bad value (:class:`Refused` to give the
        reason instead of ``allowed``).
    allowed : str
        What the option takes, as the error message says it (``1, 2 or 3``).
    """

    key: str
    default: Any
    parse: Callable[[str], Any]
    allowed: str


def choice(values: Sequence[Any]) -> Callable[[str], Any]:
    """A parser accepting exactly ``values`` (integers spelled in decimal, or strings)."""
    def parse(text: str) -> Any:
        if all(isinstance(v, int) for v in values):
            if not _INTEGER.match(text) or int(text) not in values:
                raise ValueError
            return int(text)
        if text not in values:
            raise ValueError
        return text
    return parse


def loadable(load: Callable[[str], object]) -> Callable[[str], str]:
    """A parser accepting what ``load`` accepts (a host profile's name or file, say); ``load``'s
    own one-line error is the one the user sees."""
    def parse(text: str) -> str:
        try:
            load(text)
        except ValueError as exc:
            raise Refused(str(exc)) from None
        return text
    return parse


def one_of(values: Sequence[Any]) -> str:
    """``(1, 2, 3)`` -> ``"1, 2 or 3"``."""
    names = [str(v) for v in values]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def number(low: float, high: float = math.inf, *, low_open: bool = False) -> Callable[[str], float]:
    """A parser of finite numbers in ``low..high`` (``low`` excluded when ``low_open``)."""
    def parse(text: str) -> float:
        value = float(text)  # ValueError for anything that is not a number, bare below
        if not math.isfinite(value) or value > high or value < low or (low_open and value == low):
            raise ValueError
        return value
    return parse


def _error(name: str, key: str, text: str, allowed: str, detail: str = "") -> InvalidRequest:
    return InvalidRequest(f"{name} option {key}={text!r}: {detail or f'{key} must be {allowed}'}")


def check_value(name: str, option: Option, text: str) -> Any:
    """``option``'s value for ``text``; :class:`InvalidRequest` naming the option if refused."""
    try:
        return option.parse(text)
    except Refused as exc:
        raise _error(name, option.key, text, option.allowed, str(exc)) from None
    except ValueError:  # float()'s own message would name neither the option nor the range
        raise _error(name, option.key, text, option.allowed) from None


def parse_options(name: str, given: Mapping[str, str], rules: Sequence[Option]) -> dict[str, Any]:
    """Every option of ``rules`` typed (defaults filled in) from the selector's ``given`` strings.

    ``name`` is the target as messages call it (``sim:pcie``).
    """
    by_key = {rule.key: rule for rule in rules}
    unknown = [key for key in given if key not in by_key]
    if unknown:
        takes = f"it takes {', '.join(by_key)}" if by_key else "it takes no options"
        raise InvalidRequest(f"{name}: unknown option(s) {', '.join(unknown)} ({takes})")
    return {rule.key: check_value(name, rule, given[rule.key]) if rule.key in given
            else rule.default for rule in rules}
