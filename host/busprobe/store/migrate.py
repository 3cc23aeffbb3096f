"""Bring a store's schema to this busprobe's revision when it is opened (Alembic, online).

The check is one query (``alembic_version``); only a store behind runs the scripts in
``migrations/``, under a lock so that eight processes opening a new store at once build it once:
PostgreSQL's transaction-scoped advisory lock (its DDL is transactional, so the lock and the
schema change commit together), a ``flock`` on a file beside an SQLite database. A read-only
role opens a current store without writing anything.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, text

from . import migrations

__all__ = ["upgrade", "head_revision"]

#: pg_advisory_xact_lock's key for "the busprobe schema is being changed" (any fixed 64-bit value).
_PG_LOCK_KEY = 0x6275_7370_726F_6265  # "busprobe"


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(Path(migrations.__file__).parent))
    return config


def head_revision() -> str:
    """The revision this busprobe's tables are at."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def _current(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


@contextlib.contextmanager
def _sqlite_lock(engine: Engine) -> Iterator[None]:
    path = Path(f"{engine.url.database}.lock")
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _run(connection: Connection) -> None:
    from alembic import command

    config = _config()
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


def upgrade(engine: Engine) -> None:
    """Run every revision ``engine``'s database lacks (nothing when it is current)."""
    head = head_revision()
    with engine.connect() as connection:
        if _current(connection) == head:
            return
    if engine.dialect.name == "postgresql":
        with engine.begin() as connection:
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
            if _current(connection) != head:
                _run(connection)
        return
    with _sqlite_lock(engine), engine.begin() as connection:
        if _current(connection) != head:
            _run(connection)
