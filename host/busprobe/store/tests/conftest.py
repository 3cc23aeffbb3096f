"""Real database servers for the store's tests: an SQLite file, and a throwaway PostgreSQL
cluster (Debian's ``postgresql``) that the tests start and stop themselves.

The cluster lives in a temporary folder, listens on a Unix socket only
(``listen_addresses=''``), asks every role for its password (scram-sha-256), and is stopped
with ``pg_ctl -m fast stop`` after the session. ``initdb`` refuses to run as root: under root
the cluster runs as the ``postgres`` user (docs/DESIGN.md §5.7).
"""

import itertools
import json
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "results"
PG_BIN = Path("/usr/lib/postgresql/15/bin")
ADMIN, ADMIN_PASSWORD = "lab_admin", "admin-secret-7Hq"


class Cluster:
    """A running PostgreSQL cluster: its socket folder and an admin who may create databases."""

    def __init__(self, socket_dir: Path) -> None:
        self.socket_dir = socket_dir
        self._names = itertools.count()

    def url(self, database: str, user: str = ADMIN, password: str | None = ADMIN_PASSWORD) -> str:
        secret = f":{password}" if password is not None else ""
        return f"postgresql://{user}{secret}@/{database}?host={self.socket_dir}"

    def admin(self, database: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(dbname=database, user=ADMIN, password=ADMIN_PASSWORD,
                               host=str(self.socket_dir), autocommit=True)

    def new_database(self) -> str:
        name = f"lab_{os.getpid()}_{next(self._names)}"
        with self.admin() as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return name


def _as_cluster_user(argv: list[str], owner: str | None) -> list[str]:
    return ["runuser", "-u", owner, "--", *argv] if owner else argv


@pytest.fixture(scope="session")
def postgres():
    # `make install` installs Debian's postgresql; a skip here would check nothing.
    assert (PG_BIN / "initdb").exists(), \
        "PostgreSQL is missing: run `make install` as root, or apt install postgresql"
    owner = "postgres" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="busprobe-pg-"))
    data, sockets = root / "data", root / "sockets"
    sockets.mkdir()
    (root / "pw").write_text(ADMIN_PASSWORD + "\n")
    if owner:
        entry = pwd.getpwnam(owner)
        for path in (root, sockets, root / "pw"):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    run = dict(check=True, capture_output=True, timeout=120)
    subprocess.run(_as_cluster_user(
        [str(PG_BIN / "initdb"), "-D", str(data), "-U", ADMIN, f"--pwfile={root / 'pw'}",
         "--auth-local=scram-sha-256", "--auth-host=reject", "--no-sync"], owner), **run)
    subprocess.run(_as_cluster_user(
        [str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-o",
         f"-k {sockets} -c listen_addresses='' -c fsync=off -c synchronous_commit=off "
         "-c max_connections=60", "start"], owner), **run)
    try:
        yield Cluster(sockets)
    finally:
        subprocess.run(_as_cluster_user(
            [str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"], owner), **run)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """A new, empty store of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'results.sqlite'}"
    cluster = request.getfixturevalue("postgres")
    return cluster.url(cluster.new_database())


@pytest.fixture
def result_files():
    """Every result file of tests/fixtures/results (real sweeps' documents)."""
    return sorted(FIXTURES.glob("*.json"))


@pytest.fixture
def fixture_doc():
    """A fixture result file's document, to derive a test's document from."""
    return lambda name: json.loads((FIXTURES / name).read_bytes())
