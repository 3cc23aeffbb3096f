"""The result document's layout (docs/DESIGN.md §3), checked once when a result is loaded.

``compare``, ``report`` and ``fit`` read documents that a user may have edited, truncated or
produced with another tool. Each reader used to trust a different subset of keys, so a ``null``
device name or a ``ceilings`` that is a number got as far as the plot or the HTML writer and
ended in a traceback. :func:`check_document` is the one place that says what a schema-1
document may hold: every key a reader uses, with its JSON type and range. Keys it does not name
are left alone (a newer writer of the same schema may add some).

A spec is one of:

- a tuple of JSON kinds (``"str"``, ``"int"``, ``"num"``, ``"bool"``, ``"null"``, ``"list"``,
  ``"object"``): the value must be one of them; ``"num"`` is a finite int or float;
- an :class:`Object`: a JSON object with named fields;
- a :class:`ListOf`: a JSON array whose items all match one spec;
- a :class:`Choice`: a string among fixed values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SCHEMA", "check_document", "DIRECTIONS", "PROTOCOLS", "VERDICTS", "protocol_of"]

#: The result layout this busprobe writes and reads (a document with a larger one is refused).
SCHEMA = 1
#: Every transfer direction a point may have (USB: ``in``/``out``; PCIe: ``write``/``read``;
#: both: ``loopback``; ``both`` is a sweep option, never a point's direction).
DIRECTIONS = ("in", "out", "write", "read", "loopback")
#: Transfer framings (``bus.protocol``; absent in results written before BOT: ``stream``);
#: ``uas`` only on a ``usb-storage`` bus (a null disk the kernel's ``uas`` driver drives).
PROTOCOLS = ("stream", "bot", "uas")
#: The verdicts ``busprobe.verdict.assess`` gives.
VERDICTS = ("link-limited", "host-limited", "driver-limited", "upstream-limited",
            "device-limited", "tool-limited")


@dataclass(frozen=True)
class Object:
    """A JSON object. ``required`` keys must be present; ``optional`` ones may be."""

    required: dict[str, Spec] = field(default_factory=dict)
    optional: dict[str, Spec] = field(default_factory=dict)
    nullable: bool = False


@dataclass(frozen=True)
class ListOf:
    """A JSON array whose items match ``item``."""

    item: Spec
    nullable: bool = False


@dataclass(frozen=True)
class Choice:
    """A string among ``values``."""

    values: tuple[str, ...]
    nullable: bool = False


Spec = tuple[str, ...] | Object | ListOf | Choice

STR, INT, NUM, BOOL = ("str",), ("int",), ("num",), ("bool",)
OPT_STR, OPT_INT, OPT_NUM, OPT_BOOL = ("str", "null"), ("int", "null"), ("num", "null"), \
    ("bool", "null")
#: Counts and sizes that are never negative, and rates: the ranges checked beyond the type.
_NON_NEGATIVE = {"errors", "throughput", "throughput_min", "throughput_max", "device_throughput",
                 "device_throughput_min", "device_throughput_max", "ceiling", "link_ceiling",
                 "model", "plateau", "bytes", "transfers", "short_transfers", "repeats",
                 "queue_depth_in_force", "max_packet_size", "spread", "device_ceiling",
                 "tool_ceiling", "tool_completions_per_s", "throughput_mean",
                 "device_run_throughput", "device_run_plateau"}
_POSITIVE = {"length", "queue_depth", "width", "mps", "mrrs", "schema"}

BUS = Object(
    required={"kind": STR},
    optional={"speed": OPT_STR, "width": OPT_INT, "mps": OPT_INT, "mrrs": OPT_INT,
              "host_profile": OPT_STR, "max_packet_size": OPT_INT,
              "extra": ("object", "null"), "protocol": Choice(PROTOCOLS)})

POINT = Object(
    required={"direction": Choice(DIRECTIONS), "length": INT, "queue_depth": INT, "errors": INT,
              "throughput": NUM, "throughput_min": NUM, "throughput_max": NUM},
    optional={"queue_depth_in_force": OPT_INT, "mps": OPT_INT, "mrrs": OPT_INT,
              "spread": OPT_NUM, "repeats": INT, "samples": ListOf(NUM),
              "throughput_mean": OPT_NUM,
              "device_throughput": OPT_NUM, "device_throughput_min": OPT_NUM,
              "device_throughput_max": OPT_NUM, "device_samples": ListOf(OPT_NUM, nullable=True),
              "seconds": ListOf(NUM), "transfers": INT, "bytes": INT, "sized_by": OPT_STR,
              "error_detail": ("object", "null"), "short_transfers": INT,
              "ceiling": OPT_NUM, "ceiling_formula": OPT_STR, "efficiency": OPT_NUM,
              "link_ceiling": OPT_NUM, "link_efficiency": OPT_NUM,
              "device_ceiling": OPT_NUM, "device_efficiency": OPT_NUM,
              "tool_ceiling": OPT_NUM, "tool_completions_per_s": OPT_NUM, "tool_path": OPT_STR,
              "tool_limited": OPT_BOOL,
              "telemetry": ("object", "null"), "telemetry_repeats": ("list", "null"),
              # The device-run beside the host-run (PCIe SoC firmware): median, and the runs.
              "device_run_throughput": OPT_NUM, "device_run": ("object", "null")})

CEILING = Object(
    required={"direction": Choice(DIRECTIONS), "verdict": Choice(VERDICTS),
              "explanation": STR},
    optional={"mps": OPT_INT, "mrrs": OPT_INT, "model": OPT_NUM, "model_name": OPT_STR,
              "model_formula": OPT_STR, "plateau": OPT_NUM, "plateau_spread": OPT_NUM,
              "plateau_lengths": ListOf(INT, nullable=True), "plateau_reached": OPT_BOOL,
              "plateau_start": OPT_INT, "plateau_band": OPT_NUM, "plateau_why": OPT_STR,
              "queue_depth": OPT_INT, "efficiency": OPT_NUM, "units": OPT_STR,
              "device_plateau": OPT_NUM, "device_efficiency": OPT_NUM, "profile": OPT_STR,
              "profile_ceiling": OPT_NUM, "profile_efficiency": OPT_NUM,
              "device_profile_efficiency": OPT_NUM, "qd_effect": ("object", "null"),
              "device_run_plateau": OPT_NUM, "device_run_efficiency": OPT_NUM,
              "evidence": ("object", "null")},
    nullable=True)

DOCUMENT = Object(
    required={"busprobe_version": STR, "device": STR, "bus": BUS, "points": ListOf(POINT)},
    optional={"schema": INT, "run_id": STR, "topology": ListOf(("object",), nullable=True),
              "host": ("object", "null"), "command": ListOf(STR, nullable=True),
              "started": OPT_STR, "finished": OPT_STR, "units": Choice(("bytes/s",), True),
              "display_units": Choice(("MB/s", "MiB/s"), True), "plan": ("object", "null"),
              "complete": OPT_BOOL, "error": OPT_STR, "errors": OPT_INT,
              "ceilings": ListOf(CEILING, nullable=True), "ceiling": CEILING})


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float" if math.isfinite(value) else "non-finite number"
    return {str: "str", list: "list", dict: "object"}.get(type(value), type(value).__name__)


def _matches(kinds: tuple[str, ...], value: Any) -> bool:
    kind = _kind(value)
    return kind in kinds or (kind in ("int", "float") and "num" in kinds)


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"a {_kind(value)}"


def _check(where: str, spec: Spec, value: Any) -> None:
    """Raise ``ValueError("WHERE is VALUE, not ...")`` where ``value`` breaks ``spec``."""
    if isinstance(spec, tuple):
        if not _matches(spec, value):
            wanted = " or ".join("number" if k == "num" else k for k in spec if k != "null")
            raise ValueError(f"{where} is {_describe(value)}, not {wanted}")
        name = where.rsplit(".", 1)[-1]
        if _kind(value) in ("int", "float"):
            if name in _POSITIVE and value <= 0 or name in _NON_NEGATIVE and value < 0:
                raise ValueError(f"{where} is {value!r}, out of range")
        return
    if value is None and spec.nullable:
        return
    if isinstance(spec, Choice):
        if value not in spec.values:
            raise ValueError(f"{where} is {_describe(value)}, not one of {', '.join(spec.values)}")
    elif isinstance(spec, ListOf):
        if not isinstance(value, list):
            raise ValueError(f"{where} is {_describe(value)}, not a list")
        for index, item in enumerate(value):
            _check(f"{where}[{index}]", spec.item, item)
    else:
        if not isinstance(value, dict):
            raise ValueError(f"{where} is {_describe(value)}, not an object")
        missing = [key for key in spec.required if key not in value]
        if missing:
            raise ValueError(f"{where} has no {', '.join(missing)}")
        for key, sub in (spec.required | spec.optional).items():
            if key in value:
                _check(f"{where}.{key}", sub, value[key])


def check_document(doc: Any, name: str = "result") -> None:
    """One-line :class:`ValueError` naming the first key of ``doc`` that breaks the layout."""
    if not isinstance(doc, dict):
        raise ValueError(f"{name} is not a busprobe result (not a JSON object)")
    missing = [key for key in DOCUMENT.required if key not in doc]
    if missing:
        raise ValueError(f"{name} is not a busprobe result (missing {', '.join(missing)})")
    schema = doc.get("schema", SCHEMA)
    if _kind(schema) != "int" or schema < 1:
        raise ValueError(f"{name} is not a busprobe result (schema is {_describe(schema)})")
    if schema > SCHEMA:
        raise ValueError(f"{name} was written by a newer busprobe (schema {schema})")
    try:
        _check("", DOCUMENT, doc)
    except ValueError as exc:
        raise ValueError(f"{name}: {str(exc).lstrip('.')}") from None


def protocol_of(doc: dict[str, Any]) -> str:
    """The transfer framing of a checked result document (``stream`` when it does not say)."""
    return (doc.get("bus") or {}).get("protocol") or "stream"
