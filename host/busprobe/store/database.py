"""A results store opened from its URL: push a result document, list runs, export one.

Every write is one transaction: the run row, its hops, points and verdicts appear together or
not at all. A push is idempotent by ``run_id``: the run row is inserted with "on conflict do
nothing" (PostgreSQL and SQLite both have it), and only the process whose row went in writes the
rest, so eight processes pushing the same runs at once store each one once. A database error
becomes a :class:`StoreError`: one line naming the store without its password.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, create_engine, event, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Row
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from ..results import parse_results
from . import columns, migrate
from .query import EVERY_RUN, RunFilter
from .run_id import run_id_of
from .tables import hops, points, runs, verdicts
from .url import default_url, redact, resolve

__all__ = ["Store", "StoreError", "open_store", "Pushed", "LISTED"]

#: The run columns ``store ls`` shows (everything but the document).
LISTED = ("run_id", "started", "host_name", "kernel", "device", "bus_kind", "controller",
          "root_port", "chipset", "busprobe_version", "design", "complete", "errors", "flagged",
          "points")


class StoreError(ValueError):
    """The store could not be reached or refused the operation; ``str()`` is one line."""


@dataclass(frozen=True)
class Pushed:
    """What a push did: ``run_id``, and whether this push stored it (False: it was there)."""

    run_id: uuid.UUID
    stored: bool


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL: readers never wait for a writer; busy_timeout: writers queue instead of failing.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=60000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _engine(url_text: str | None) -> Engine:
    url = resolve(url_text)
    if url.get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"timeout": 60})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, connect_args={"connect_timeout": 10}, pool_size=2)


def _reason(exc: SQLAlchemyError) -> str:
    orig = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    lines = [line.strip() for line in str(orig).splitlines() if line.strip()]
    return lines[0] if lines else type(orig).__name__


class Store:
    """One results store.

    Parameters
    ----------
    engine : Engine
        Its SQLAlchemy engine (:func:`open_store` makes it from a URL).
    name : str
        The URL the user gave (shown without its password in every message).
    """

    def __init__(self, engine: Engine, name: str | None = None) -> None:
        self.engine = engine
        self.name = redact(name or engine.url)

    def error(self, exc: SQLAlchemyError, doing: str) -> StoreError:
        """The one line for ``exc``, raised while ``doing``."""
        return StoreError(f"results store {self.name}: {doing}: {_reason(exc)}")

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------------
    def _insert(self) -> Any:
        return pg_insert if self.engine.dialect.name == "postgresql" else sqlite_insert

    def push(self, raw: bytes, name: str = "result") -> Pushed:
        """Store the result document whose file holds ``raw``; refuses (``ValueError``, one
        line) what is not a result document."""
        doc = parse_results(raw, name)
        run_id = run_id_of(doc, raw)
        entries = columns.verdict_entries(doc)
        run = columns.run_row(run_id, doc, raw)
        # RETURNING says whether the row went in (a conflict returns nothing); rowcount does
        # not say it reliably through every driver.
        statement = self._insert()(runs).values(run).on_conflict_do_nothing(
            index_elements=[runs.c.run_id]).returning(runs.c.run_id)
        try:
            with self.engine.begin() as connection:
                if connection.execute(statement).first() is None:
                    return Pushed(run_id, False)
                for table, rows in ((hops, columns.hop_rows(run_id, doc)),
                                    (points, columns.point_rows(run_id, doc, entries)),
                                    (verdicts, columns.verdict_rows(run_id, entries))):
                    if rows:
                        connection.execute(table.insert(), rows)
        except SQLAlchemyError as exc:
            raise self.error(exc, f"cannot store {name}") from None
        return Pushed(run_id, True)

    # -- reading -----------------------------------------------------------------------------
    def list_runs(self, selection: RunFilter = EVERY_RUN) -> list[Row]:
        """The runs ``selection`` names, newest first, without their documents."""
        statement = (select(*(runs.c[name] for name in LISTED)).where(selection.where())
                     .order_by(runs.c.started.desc().nulls_last(), runs.c.run_id))
        try:
            with self.engine.connect() as connection:
                return list(connection.execute(statement))
        except SQLAlchemyError as exc:
            raise self.error(exc, "cannot list runs") from None

    def count(self) -> int:
        try:
            with self.engine.connect() as connection:
                return int(connection.execute(select(func.count()).select_from(runs)).scalar())
        except SQLAlchemyError as exc:
            raise self.error(exc, "cannot count runs") from None

    def export(self, run_id: str) -> bytes:
        """The document of run ``run_id`` (a whole UUID, or a unique leading part of one),
        byte for byte as it was pushed."""
        matches = self._find(run_id)
        if len(matches) != 1:
            raise StoreError(f"results store {self.name}: "
                             + (f"no run {run_id!r}" if not matches else
                                f"{run_id!r} begins more than one run id; give more of it"))
        return matches[0]

    def _find(self, run_id: str) -> list[bytes]:
        text = run_id.strip().lower()
        try:
            whole = uuid.UUID(text)
        except ValueError:
            whole = None
        try:
            with self.engine.connect() as connection:
                if whole is not None:
                    statement = select(runs.c.document).where(runs.c.run_id == whole)
                    return list(connection.execute(statement).scalars())
                # A leading part: the ids only (SQLite keeps a UUID as 32 hex digits, PostgreSQL
                # as uuid, so the prefix is matched here, not in SQL), then the one document.
                found = [run for run in connection.execute(select(runs.c.run_id)).scalars()
                         if str(run).startswith(text)][:2]
                if len(found) != 1:
                    return [b""] * len(found)
                statement = select(runs.c.document).where(runs.c.run_id == found[0])
                return list(connection.execute(statement).scalars())
        except SQLAlchemyError as exc:
            raise self.error(exc, f"cannot read run {run_id!r}") from None

    def documents(self, selection: RunFilter = EVERY_RUN) -> Iterator[tuple[str, bytes, bool]]:
        """``(run_id, document bytes, flagged)`` of every run ``selection`` names, oldest
        first."""
        statement = (select(runs.c.run_id, runs.c.document, runs.c.flagged)
                     .where(selection.where())
                     .order_by(runs.c.started.asc().nulls_first(), runs.c.run_id))
        try:
            with self.engine.connect() as connection:
                rows = list(connection.execute(statement))
        except SQLAlchemyError as exc:
            raise self.error(exc, "cannot read runs") from None
        for row in rows:
            yield str(row.run_id), row.document, row.flagged

    def execute_all(self, statement: Any) -> Sequence[Row]:
        """Rows of a read-only ``statement`` (the group figures' query)."""
        try:
            with self.engine.connect() as connection:
                return list(connection.execute(statement))
        except SQLAlchemyError as exc:
            raise self.error(exc, "cannot read runs") from None


def open_store(url: str | None = None) -> Store:
    """The store at ``url`` (None: :func:`busprobe.store.url.default_url`), its schema brought
    up to date."""
    engine = _engine(url)
    store = Store(engine, url or default_url())
    try:
        migrate.upgrade(engine)
    except SQLAlchemyError as exc:
        engine.dispose()
        raise store.error(exc, "cannot open") from None
    return store
