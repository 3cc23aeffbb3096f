"""The store's speed goals, measured (``make bench``), never asserted: a 1,000-point push under
1 s, ``store ls`` over 10,000 runs under 1 s, ``report --group-by`` over 1,000 runs under 10 s,
into SQLite and PostgreSQL on this machine. Figures are printed (run with ``-s``)."""

import copy
import json
import time
import uuid
from datetime import UTC, datetime

import pytest
from busprobe.cli import main
from busprobe.store import open_store
from busprobe.store.columns import hop_rows, point_rows, run_row, verdict_entries, verdict_rows
from busprobe.store.tables import hops, points, runs, verdicts

#: Real sweeps the derived runs are made from (a capped and an uncapped PCIe link, two USB hosts).
SOURCES = ("sim_pcie_gen2x1.json", "sim_pcie_gen2x1_cap290.json", "sim_usb2_demo_xhci.json",
           "sim_usb2_demo_ehci.json")


def _bulk_load(store, fixture_doc, count):
    """Fill the store in one transaction with ``count`` runs derived from the real sweeps (own
    run id, host and start time; set-up, not measured): the rows a push of each would write."""
    bases = []
    for name in SOURCES:
        doc = fixture_doc(name)
        raw = (json.dumps(doc, indent=2) + "\n").encode()
        entries = verdict_entries(doc)
        placeholder = uuid.uuid4()
        bases.append((run_row(placeholder, doc, raw), hop_rows(placeholder, doc),
                      point_rows(placeholder, doc, entries), verdict_rows(placeholder, entries)))
    tables = {runs: [], hops: [], points: [], verdicts: []}
    for index in range(count):
        run_id = uuid.uuid4()
        run, hop, point, verdict = bases[index % len(bases)]
        tables[runs].append(dict(run, run_id=run_id, host_name=f"lab-{index % 40:02d}",
                                 started=datetime(2026, 11, 1 + index % 28, 8, tzinfo=UTC)))
        for table, rows in ((hops, hop), (points, point), (verdicts, verdict)):
            tables[table] += [dict(row, run_id=run_id) for row in rows]
    with store.engine.begin() as connection:
        for table, rows in tables.items():
            connection.execute(table.insert(), rows)


@pytest.mark.bench
def test_bench_push_of_a_1000_point_run(store_url, fixture_doc):
    doc = fixture_doc("sim_usb2_xhci_odd.json")
    template = doc["points"]
    doc["points"] = [dict(copy.deepcopy(template[i % len(template)]), length=512 + i)
                     for i in range(1000)]
    doc["run_id"] = str(uuid.uuid4())
    raw = (json.dumps(doc, indent=2) + "\n").encode()
    with open_store(store_url) as store:
        started = time.perf_counter()
        assert store.push(raw, "1000 points").stored
        seconds = time.perf_counter() - started
    print(f"\npush of a 1,000-point run ({len(raw) / 1e6:.1f} MB) into "
          f"{store_url.split(':')[0]}: {seconds:.3f} s (goal < 1 s)")


@pytest.mark.bench
def test_bench_ls_over_10000_runs(store_url, fixture_doc, tmp_path, capsys):
    with open_store(store_url) as store:
        _bulk_load(store, fixture_doc, 10_000)
    started = time.perf_counter()
    assert main(["store", "ls", "--store", store_url, "--json", str(tmp_path / "ls.json")]) == 0
    seconds = time.perf_counter() - started
    assert len(json.loads((tmp_path / "ls.json").read_bytes())) == 10_000
    with capsys.disabled():
        print(f"\nstore ls over 10,000 runs in {store_url.split(':')[0]}: {seconds:.3f} s "
              "(goal < 1 s)")


@pytest.mark.bench
def test_bench_report_group_by_over_1000_runs(store_url, fixture_doc, tmp_path, capsys):
    with open_store(store_url) as store:
        _bulk_load(store, fixture_doc, 1000)
    started = time.perf_counter()
    assert main(["report", "--store", store_url, "--group-by", "controller",
                 "-o", str(tmp_path / "lab.html")]) == 0
    seconds = time.perf_counter() - started
    with capsys.disabled():
        print(f"\nreport --group-by controller over 1,000 runs in "
              f"{store_url.split(':')[0]}: {seconds:.3f} s (goal < 10 s)")
