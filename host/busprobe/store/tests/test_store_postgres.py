"""What only a shared PostgreSQL store meets: many pushers at once, a server that is down, a
read-only role, and credentials that never show. Against the cluster conftest.py starts."""

import json
import subprocess
import sys
import uuid

from busprobe.cli import main
from busprobe.store import open_store

PUSHERS, RUNS_EACH = 8, 200


def _derived_runs(fixture_doc, tmp_path, count):
    """``count`` result files made from one real sweep's document, each its own run and host."""
    base = fixture_doc("sim_pcie_gen2x1.json")
    paths = []
    for index in range(count):
        doc = dict(base, run_id=str(uuid.uuid4()),
                   host=dict(base["host"], hostname=f"lab-{index % 16:02d}"))
        path = tmp_path / f"run{index:04d}.json"
        path.write_text(json.dumps(doc, indent=2) + "\n")
        paths.append(path)
    return paths


def test_eight_pushers_at_once_store_every_run_exactly_once(postgres, fixture_doc, tmp_path):
    url = postgres.url(postgres.new_database())
    distinct = PUSHERS * RUNS_EACH // 2
    paths = _derived_runs(fixture_doc, tmp_path, distinct)
    # Pusher k takes 200 runs starting at 100 k: every run is pushed by two pushers at once.
    shares = [[paths[(k * RUNS_EACH // 2 + i) % distinct] for i in range(RUNS_EACH)]
              for k in range(PUSHERS)]
    pushers = [subprocess.Popen([sys.executable, "-m", "busprobe", "store", "push",
                                 *map(str, share), "--store", url],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for share in shares]
    results = [p.communicate(timeout=600) for p in pushers]
    assert [p.returncode for p in pushers] == [0] * PUSHERS, [err for _, err in results]
    stored = [line.split()[1] for out, _ in results for line in out.splitlines()
              if line.startswith("stored ")]
    assert len(stored) == len(set(stored)) == distinct  # each stored by exactly one pusher
    with open_store(url) as store:
        assert store.count() == distinct
        for path in paths:
            run_id = json.loads(path.read_bytes())["run_id"]
            assert store.export(run_id) == path.read_bytes()
    with postgres.admin(url.split("/")[3].split("?")[0]) as connection:
        points = connection.execute("SELECT count(*) FROM points").fetchone()[0]
    assert points == distinct * len(fixture_doc("sim_pcie_gen2x1.json")["points"])


def test_a_push_while_the_server_is_down_keeps_the_file_and_says_how_to_push_later(
        postgres, result_files, tmp_path, capsys):
    # The socket folder of a server that is not running: what a stopped server looks like.
    down = tmp_path / "no-server"
    down.mkdir()
    url = f"postgresql://lab_admin:pw-never-shown@/lab?host={down}"
    path = tmp_path / "result.json"
    path.write_bytes(result_files[0].read_bytes())
    status = main(["store", "push", str(path), "--store", url])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "pw-never-shown" not in err
    assert f"push them later with busprobe store push {path} --store " \
           f"'postgresql://lab_admin:***@/lab?host={down}'" in err
    assert path.read_bytes() == result_files[0].read_bytes()


def _reader(postgres, database):
    """A role that may read the store and nothing else."""
    with postgres.admin(database) as connection:
        connection.execute("CREATE ROLE lab_reader LOGIN PASSWORD 'reader-secret-3x'"
                           if not connection.execute(
                               "SELECT 1 FROM pg_roles WHERE rolname = 'lab_reader'").fetchone()
                           else "SELECT 1")
        connection.execute(f'GRANT CONNECT ON DATABASE "{database}" TO lab_reader')
        connection.execute("GRANT USAGE ON SCHEMA public TO lab_reader")
        connection.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO lab_reader")


def test_a_read_only_role_lists_compares_and_reports_but_cannot_push(
        postgres, result_files, tmp_path, capsys, monkeypatch):
    database = postgres.new_database()
    assert main(["store", "push", *map(str, result_files), "--store",
                 postgres.url(database)]) == 0
    _reader(postgres, database)
    capsys.readouterr()
    # The password from libpq's password file (~/.pgpass; PGPASSFILE names it here).
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"*:*:{database}:lab_reader:reader-secret-3x\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    reader = postgres.url(database, user="lab_reader", password=None)
    assert main(["store", "ls", "--store", reader, "--json", "-"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == len(result_files)
    assert main(["compare", "--store", reader, "--group-by", "chipset"]) == 0
    assert "Upstream-limited groups" in capsys.readouterr().out
    lab = tmp_path / "lab.html"
    assert main(["report", "--store", reader, "--group-by", "chipset", "--bus", "pcie",
                 "-o", str(lab)]) == 0
    assert "upstream-limited" in lab.read_text()
    capsys.readouterr()
    # The password from the environment (PGPASSWORD), and a push the role may not make.
    monkeypatch.delenv("PGPASSFILE")
    monkeypatch.setenv("PGPASSWORD", "reader-secret-3x")
    new = tmp_path / "new.json"
    new.write_text(json.dumps(dict(json.loads(result_files[0].read_bytes()),
                                   run_id=str(uuid.uuid4()))))
    status = main(["store", "push", str(new), "--store", reader])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert "permission denied" in err and "reader-secret-3x" not in err


def test_a_wrong_password_is_never_printed(postgres, capsys):
    url = postgres.url("postgres", password="not-the-password-42")
    assert main(["store", "ls", "--store", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not-the-password-42" not in err
    assert "lab_admin:***@" in err and "password authentication failed" in err
