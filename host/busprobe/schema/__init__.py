"""Published JSON Schemas of what busprobe writes, shipped in the package for other tools.

``result.schema.json`` (JSON Schema 2020-12) is the layout of a result document (docs/DESIGN.md
§3), the one definition of it: :mod:`busprobe.result_schema` checks every document it loads
against it with ``jsonschema``. Another tool finds it with
``importlib.resources.files("busprobe.schema") / "result.schema.json"``.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

__all__ = ["RESULT_SCHEMA"]

#: The result document's JSON Schema file.
RESULT_SCHEMA: Traversable = files(__name__) / "result.schema.json"
