"""The results store against real servers (an SQLite file, a PostgreSQL cluster the tests start):
the same tests for both, through the real argument parser."""

import hashlib
import json
import statistics
import uuid

import pytest
from busprobe.cli import main
from busprobe.results import ceilings_of
from busprobe.store import open_store
from busprobe.store.columns import verdict_entries
from busprobe.store.run_id import CONTENT_NAMESPACE


def _cli(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _ls(capsys, url, *filters):
    status, out, err = _cli(capsys, "store", "ls", "--store", url, "--json", "-", *filters)
    assert status == 0, err
    return json.loads(out)


def _write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def test_every_fixture_exports_byte_for_byte_as_pushed(store_url, capsys, tmp_path,
                                                       result_files):
    files = result_files
    status, out, err = _cli(capsys, "store", "push", *map(str, files), "--store", store_url)
    assert status == 0, err
    ids = [line.split()[1] for line in out.splitlines()]
    assert len(set(ids)) == len(files)
    for run_id, path in zip(ids, files, strict=True):
        exported = tmp_path / "back.json"
        assert main(["store", "export", run_id, "-o", str(exported), "--store", store_url]) == 0
        assert exported.read_bytes() == path.read_bytes(), path.name
    # The first 8 digits ls shows are enough; a part that begins several ids is refused.
    exported = tmp_path / "short.json"
    assert main(["store", "export", ids[0][:8], "-o", str(exported), "--store", store_url]) == 0
    assert exported.read_bytes() == files[0].read_bytes()
    capsys.readouterr()
    shared = next(c for c in "0123456789abcdef" if sum(i.startswith(c) for i in ids) > 1)
    status, _, err = _cli(capsys, "store", "export", shared, "-o", str(exported), "--store",
                          store_url)
    assert status == 2 and "begins more than one run id" in err


def test_push_is_idempotent_by_run_id_and_old_files_get_an_id_from_their_bytes(
        store_url, capsys, tmp_path, result_files, fixture_doc):
    old = result_files[0]  # written before run_id
    assert "run_id" not in json.loads(old.read_bytes())
    copy = tmp_path / "copy.json"
    copy.write_bytes(old.read_bytes())
    status, out, _ = _cli(capsys, "store", "push", str(old), str(copy), "--store", store_url)
    assert status == 0
    first, second = out.splitlines()
    derived = uuid.uuid5(CONTENT_NAMESPACE, hashlib.sha256(old.read_bytes()).hexdigest())
    assert first.startswith(f"stored {derived}") and second.startswith(f"already stored {derived}")
    # A new run carries its own id: pushed twice, stored once, under that id.
    doc = dict(fixture_doc("sim_pcie_gen2x1.json"), run_id=str(uuid.uuid4()))
    path = _write(tmp_path, "new.json", doc)
    for _ in range(2):
        assert main(["store", "push", str(path), "--store", store_url]) == 0
    capsys.readouterr()
    with open_store(store_url) as store:
        assert store.count() == 2
    assert [r["run_id"] for r in _ls(capsys, store_url) if r["run_id"] == doc["run_id"]]


def test_ls_filters_select_the_runs_their_documents_name(store_url, capsys, result_files):
    files = result_files
    assert main(["store", "push", *map(str, files), "--store", store_url]) == 0
    capsys.readouterr()
    docs = [json.loads(p.read_bytes()) for p in files]
    listed = _ls(capsys, store_url)
    assert len(listed) == len(files)
    pcie = _ls(capsys, store_url, "--bus", "pcie")
    assert len(pcie) == sum(d["bus"]["kind"] == "pcie" for d in docs)
    upstream = _ls(capsys, store_url, "--verdict", "upstream-limited")
    # Files written without verdicts are assessed as they are pushed.
    with_verdict = [d for d in docs
                    if any(e["verdict"] == "upstream-limited" for e in verdict_entries(d))]
    assert len(upstream) == len(with_verdict) > 0
    hosts = {(d.get("host") or {}).get("hostname") for d in docs} - {None}
    assert hosts
    for host in hosts:
        assert len(_ls(capsys, store_url, "--host", host)) == sum(
            (d.get("host") or {}).get("hostname") == host for d in docs)
    ehci = _ls(capsys, store_url, "--controller", "host profile ehci")
    assert ehci and all("ehci" in r["controller"] for r in ehci)
    started = sorted(d["started"] for d in docs if d.get("started"))
    since = _ls(capsys, store_url, "--since", started[-2])
    assert len(since) == sum(1 for s in started if s >= started[-2])


def test_group_by_chipset_names_the_capped_group_and_its_median(store_url, capsys,
                                                                result_files):
    files = result_files
    assert main(["store", "push", *map(str, files), "--store", store_url]) == 0
    capsys.readouterr()
    status, out, err = _cli(capsys, "compare", "--store", store_url, "--group-by", "chipset",
                            "--bus", "pcie", "--units", "mib")
    assert status == 0, err
    # The capped simulated root complex's write plateaus (no MPS swept), from the documents.
    docs = [json.loads(p.read_bytes()) for p in files]
    capped = [e["plateau"] for d in docs
              if d["topology"] and d["topology"][0].get("kind") == "sim-pci-root-port"
              and any("cap" in note for note in d["topology"][0].get("notes") or [])
              for e in verdict_entries(d) if e["direction"] == "write" and not e.get("mps")]
    assert len(capped) >= 2
    median = statistics.median(capped) / 2**20
    line = next(line for line in out.splitlines()
                if line.startswith("simulated root complex, capped") and " write " in line
                and "  -  " in line)
    assert f"{median:.2f}" in line
    assert "Upstream-limited groups" in out
    assert f"chipset simulated root complex, capped: pcie write upstream-limited in " \
           f"{len(capped)} of {len(capped)} runs" in out


def test_a_run_with_data_errors_is_stored_flagged_and_kept_out_of_group_figures(
        store_url, capsys, tmp_path, fixture_doc):
    clean = fixture_doc("sim_usb2_demo_xhci.json")
    broken = json.loads(json.dumps(clean))
    broken["run_id"] = str(uuid.uuid4())
    broken["points"][-1]["errors"] = 3
    broken["errors"] = 3
    for entry in ceilings_of(broken):
        entry["plateau"] *= 0.5  # were it counted, the median would move
    paths = [_write(tmp_path, "clean.json", clean), _write(tmp_path, "broken.json", broken)]
    assert main(["store", "push", *map(str, paths), "--store", store_url]) == 0
    capsys.readouterr()
    flagged = [r for r in _ls(capsys, store_url) if r["flagged"]]
    assert [r["run_id"] for r in flagged] == [broken["run_id"]]
    status, out, _ = _cli(capsys, "compare", "--store", store_url, "--group-by", "host")
    assert status == 0
    plateau = ceilings_of(clean)[0]["plateau"] / 1e6
    row = next(line for line in out.splitlines() if line.startswith("vm "))
    assert f" 1     {plateau:.2f}" in row and row.rstrip().endswith("1")
    assert f"left out of every figure: {broken['run_id'][:8]}" in out


def test_truncated_and_other_schema_files_are_refused_in_one_line(store_url, capsys, tmp_path,
                                                                  result_files):
    raw = result_files[0].read_bytes()
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(raw[: len(raw) // 2])
    newer = _write(tmp_path, "newer.json", dict(json.loads(raw), schema=99))
    other = _write(tmp_path, "other.json", {"jobs": [], "fio version": "fio-3.33"})
    status, out, err = _cli(capsys, "store", "push", str(truncated), str(newer), str(other),
                            "--store", store_url)
    assert status == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 3 and all(line.startswith("busprobe: error: refused: ") for line in lines)
    assert "truncated.json is not JSON" in lines[0]
    assert "newer busprobe (schema 99)" in lines[1]
    assert "other.json is not a busprobe result" in lines[2]
    with open_store(store_url) as store:
        assert store.count() == 0


def test_hostile_names_from_result_files_stay_parameters(store_url, capsys, tmp_path,
                                                          fixture_doc):
    doc = fixture_doc("sim_pcie_gen2x1.json")
    hostile_host = "lab'); DROP TABLE runs; --"
    hostile_device = "sim:pcie?gen=2'; DELETE FROM points WHERE '1'='1"
    doc.update(run_id=str(uuid.uuid4()), device=hostile_device,
               host=dict(doc["host"], hostname=hostile_host))
    doc["topology"][0]["driver"] = "pcieport%_\\' OR 1=1 --"
    plain = dict(fixture_doc("sim_pcie_gen2x1_cap290.json"), run_id=str(uuid.uuid4()))
    paths = [_write(tmp_path, "hostile.json", doc), _write(tmp_path, "plain.json", plain)]
    assert main(["store", "push", *map(str, paths), "--store", store_url]) == 0
    capsys.readouterr()
    runs = _ls(capsys, store_url, "--host", hostile_host)
    assert [(r["host_name"], r["device"]) for r in runs] == [(hostile_host, hostile_device)]
    # LIKE's wildcards in a filter are characters, not patterns.
    assert _ls(capsys, store_url, "--controller", "sim%pcie") == []
    assert len(_ls(capsys, store_url, "--controller", "pcieport%_\\'")) == 1
    assert len(_ls(capsys, store_url)) == 2
    with open_store(store_url) as store:
        exported = store.export(doc["run_id"])
    assert json.loads(exported)["device"] == hostile_device


def test_compare_and_report_take_the_stored_runs_the_filters_name(store_url, capsys, tmp_path,
                                                                 result_files):
    assert main(["store", "push", *map(str, result_files), "--store", store_url]) == 0
    capsys.readouterr()
    [usb3] = [json.loads(p.read_bytes()) for p in result_files
              if json.loads(p.read_bytes())["bus"]["kind"] == "usb3-ss"]
    [row] = _ls(capsys, store_url, "--bus", "usb3-ss")
    status, out, err = _cli(capsys, "compare", "--store", store_url, "--bus", "usb3-ss")
    assert status == 0, err
    assert out.startswith(f"A = {row['run_id']} ({usb3['device']})")
    assert "B = " not in out
    page = tmp_path / "usb3.html"
    status, _, err = _cli(capsys, "report", "--store", store_url, "--bus", "usb3-ss",
                          "-o", str(page))
    assert status == 0, err
    assert f"<h2>A: {usb3['device']}</h2>" in page.read_text()
    status, _, err = _cli(capsys, "compare", "--store", store_url, "--host", "nowhere")
    assert status == 2 and "no stored run" in err


def test_stored_runs_and_files_are_not_mixed_and_filters_need_the_store(capsys):
    status, _, err = _cli(capsys, "compare", "a.json", "--store", "sqlite:///x.sqlite")
    assert status == 2 and "not both" in err
    status, _, err = _cli(capsys, "compare", "a.json", "--group-by", "host")
    assert status == 2 and "add --store" in err
    with pytest.raises(SystemExit) as parse_error:  # the parser's own one-line error
        main(["store", "ls", "--verdict", "upstream-limitd"])
    err = capsys.readouterr().err
    assert parse_error.value.code == 2 and err.count("\n") == 1 and "invalid choice" in err
    status, _, err = _cli(capsys, "store", "ls", "--store", "mysql://u:pw@db/lab")
    assert status == 2 and "sqlite or postgresql" in err and "pw" not in err
