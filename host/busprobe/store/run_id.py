"""The run id every result document carries (``run_id``, a random UUID that
:func:`busprobe.results.new_document` gives), and the one a file written before busprobe wrote ids
gets: derived from its bytes, so pushing the same old file from two
machines, or twice, stores it once."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

__all__ = ["run_id_of", "CONTENT_NAMESPACE"]

#: The UUIDv5 namespace of ids derived from a document's content (fixed forever: changing it
#: would give every old file a second id).
CONTENT_NAMESPACE = uuid.UUID("5d1f0c8e-7a0b-4b8e-9f2a-62757370726f")


def run_id_of(doc: dict[str, Any], raw: bytes) -> uuid.UUID:
    """``doc``'s own ``run_id``; for a document without one, the UUIDv5 of its bytes' SHA-256.

    Raises ``ValueError`` (one line) when ``run_id`` is there but is not a UUID.
    """
    given = doc.get("run_id")
    if given is None:
        return uuid.uuid5(CONTENT_NAMESPACE, hashlib.sha256(raw).hexdigest())
    try:
        return uuid.UUID(str(given))
    except ValueError:
        raise ValueError(f"run_id {str(given)[:40]!r} is not a UUID") from None
