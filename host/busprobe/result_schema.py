"""The result document's layout (docs/DESIGN.md §2.4), checked once when a result is loaded.

``compare``, ``report`` and ``fit`` read documents that a user may have edited, truncated or
produced with another tool. Each reader used to trust a different subset of keys, so a ``null``
device name or a ``ceilings`` that is a number got as far as the plot or the HTML writer and
ended in a traceback. The layout is the published JSON Schema
``busprobe/schema/result.schema.json`` (:data:`busprobe.schema.RESULT_SCHEMA`): every key a
reader uses, with its JSON type and range; keys it does not name are left alone (a newer writer
of the same schema may add some). :func:`check_document` validates against it with
``jsonschema`` (a maintained validator) and turns the first violation into one line naming the
key: ``points[0].length is -4, out of range``.

Where JSON Schema and Python differ, the stricter reading is kept: an ``integer`` is a JSON
number written without a fraction (``4096``, not ``4096.0``, which JSON Schema would accept),
a number is finite, and ``true`` is never a number.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.exceptions import best_match

from .schema import RESULT_SCHEMA

__all__ = ["SCHEMA", "check_document", "DIRECTIONS", "PROTOCOLS", "VERDICTS", "protocol_of",
           "result_schema"]

#: The result layout this busprobe writes and reads (a document with a larger one is refused).
SCHEMA = 1


@cache
def result_schema() -> dict[str, Any]:
    """The published JSON Schema of a result document, as a mapping."""
    return json.loads(RESULT_SCHEMA.read_text(encoding="utf-8"))


def _enum(name: str) -> tuple[str, ...]:
    return tuple(result_schema()["$defs"][name]["enum"])


#: Every transfer direction a point may have (USB: ``in``/``out``; PCIe: ``write``/``read``;
#: both: ``loopback``; ``both`` is a sweep option, never a point's direction).
DIRECTIONS = _enum("direction")
#: Transfer framings (``bus.protocol``; absent in results written before BOT: ``stream``);
#: ``uas`` only on a ``usb-storage`` bus (a null disk the kernel's ``uas`` driver drives).
PROTOCOLS = _enum("protocol")
#: The verdicts ``busprobe.verdict.assess`` gives.
VERDICTS = _enum("verdict")


def _is_integer(_checker: Any, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(_checker: Any, value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)


# JSON Schema's "integer" takes 1.0 too (the readers index and range over these values), and
# its "number" a NaN a Python caller may hand over (a JSON file cannot hold one).
_Validator = validators.extend(
    Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number}))


@cache
def _validator() -> Any:
    Draft202012Validator.check_schema(result_schema())  # a broken published file fails loudly
    return _Validator(result_schema())


#: JSON Schema's type names as the error lines say them.
_TYPE_WORDS = {"string": "str", "integer": "int", "number": "number", "boolean": "bool",
               "object": "an object", "array": "a list"}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    return {int: "int", float: "float", str: "str", list: "list", dict: "object"}.get(
        type(value), type(value).__name__)


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"a {_kind(value)}"


def _where(path: Iterable[str | int]) -> str:
    """``points[0].length`` for the path ``("points", 0, "length")``."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


def _line(error: ValidationError) -> str:
    """The one line for a violation: ``WHERE is VALUE, not ...`` (its key first)."""
    where, value, rule = _where(error.absolute_path), error.instance, error.validator
    if rule == "required":
        missing = [key for key in error.validator_value if key not in value]
        return f"{where} has no {', '.join(missing)}"
    if rule == "type":
        kinds = error.validator_value if isinstance(error.validator_value, list) \
            else [error.validator_value]
        wanted = " or ".join(_TYPE_WORDS[k] for k in kinds if k != "null")
        return f"{where} is {_describe(value)}, not {wanted}"
    if rule == "enum":
        choices = ", ".join(str(v) for v in error.validator_value if v is not None)
        return f"{where} is {_describe(value)}, not one of {choices}"
    if rule in ("minimum", "exclusiveMinimum"):
        return f"{where} is {value!r}, out of range"
    return f"{where}: {error.message}"


def check_document(doc: Any, name: str = "result") -> None:
    """One-line :class:`ValueError` naming the first key of ``doc`` that breaks the layout."""
    if not isinstance(doc, dict):
        raise ValueError(f"{name} is not a busprobe result (not a JSON object)")
    missing = [key for key in result_schema()["required"] if key not in doc]
    if missing:
        raise ValueError(f"{name} is not a busprobe result (missing {', '.join(missing)})")
    schema = doc.get("schema", SCHEMA)
    if _kind(schema) != "int" or schema < 1:
        raise ValueError(f"{name} is not a busprobe result (schema is {_describe(schema)})")
    if schema > SCHEMA:
        raise ValueError(f"{name} was written by a newer busprobe (schema {schema})")
    error = best_match(_validator().iter_errors(doc))
    if error is not None:
        raise ValueError(f"{name}: {_line(error).lstrip('.')}")


def protocol_of(doc: dict[str, Any]) -> str:
    """The transfer framing of a checked result document (``stream`` when it does not say)."""
    return (doc.get("bus") or {}).get("protocol") or "stream"
