"""Which database a ``--store URL`` names, and how it is shown.

``sqlite:///PATH``
    A file (created on first use); the default is ``results.sqlite`` in the user's data
    directory (``$XDG_DATA_HOME/busprobe``, platformdirs' ``user_data_dir``).
``postgresql://[USER@][HOST[:PORT]]/DBNAME[?host=SOCKETDIR]``
    A shared lab database through psycopg 3. The password comes from the URL, libpq's
    environment (``PGPASSWORD``) or ``~/.pgpass``; it is never printed (:func:`redact`).

``BUSPROBE_STORE`` in the environment replaces the default. Standard library and SQLAlchemy's
URL parser only.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

__all__ = ["default_url", "data_dir", "resolve", "redact", "ENVIRONMENT", "StoreUrlError"]

#: The environment variable that names the store when ``--store`` gives no URL.
ENVIRONMENT = "BUSPROBE_STORE"
#: The drivers busprobe speaks each dialect through.
_DRIVERS = {"sqlite": "sqlite+pysqlite", "postgresql": "postgresql+psycopg"}


class StoreUrlError(ValueError):
    """A store URL busprobe cannot use; ``str()`` is one line without the password."""


def data_dir() -> Path:
    """busprobe's folder in the user's data directory (platformdirs)."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("busprobe", appauthor=False))


def default_url() -> str:
    """``$BUSPROBE_STORE``, else the user's own SQLite file."""
    return os.environ.get(ENVIRONMENT) or f"sqlite:///{data_dir() / 'results.sqlite'}"


def redact(url: str | URL) -> str:
    """``url`` as it may be printed: as the user typed it, the password replaced by ``***``."""
    if not isinstance(url, str):
        return url.render_as_string(hide_password=True)
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<not a database URL>"
    if password is None:
        return url
    user = parts.netloc.rpartition("@")[0].partition(":")[0]
    place = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{place}"))


def resolve(text: str | None) -> URL:
    """The SQLAlchemy URL for a ``--store`` value (None: :func:`default_url`), its driver chosen.

    Raises :class:`StoreUrlError` for anything but SQLite and PostgreSQL URLs.
    """
    text = text or default_url()
    try:
        url = make_url(text)
    except ArgumentError:
        raise StoreUrlError(f"--store {redact(text)}: not a database URL; use sqlite:///PATH "
                            "or postgresql://USER@HOST/DBNAME") from None
    dialect = url.get_backend_name()
    if dialect not in _DRIVERS:
        raise StoreUrlError(f"--store {redact(url)}: busprobe stores results in sqlite or "
                            f"postgresql, not {dialect}")
    url = url.set(drivername=_DRIVERS[dialect])
    if dialect == "sqlite":
        if not url.database or url.database == ":memory:":
            raise StoreUrlError(f"--store {redact(url)}: name a file (sqlite:///PATH); a "
                                "store in memory would be gone when the command ends")
        Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        url = url.set(database=str(Path(url.database).expanduser()))
    return url
