"""``busprobe sweep --store``: the run is stored as its JSON is written, and a store that cannot
be reached loses nothing (the JSON is kept, one line says how to push it later)."""

import json

import pytest
from busprobe.cli import main
from busprobe.results import load_results
from busprobe.store import open_store


@pytest.mark.sim
def test_a_simulated_sweep_is_stored_byte_for_byte_as_its_json(tmp_path, capsys):
    j, url = tmp_path / "usb2.json", f"sqlite:///{tmp_path / 'lab.sqlite'}"
    status = main(["sweep", "--device", "sim:usb2?host=xhci", "--direction", "in",
                   "--lengths", "512,8K", "--queue-depth", "1", "--no-progress",
                   "--json", str(j), "--store", url])
    _, err = capsys.readouterr()
    assert status == 0, err
    run_id = load_results(j)["run_id"]
    assert f"stored run {run_id} in {url}" in err
    with open_store(url) as store:
        assert store.export(run_id) == j.read_bytes()
        [row] = store.list_runs()
    assert row.host_name and row.kernel and row.controller.startswith("busprobe.sim.usb2")


def test_a_sweep_whose_store_is_down_keeps_its_json_and_says_how_to_push_it(
        loopback_device, tmp_path, capsys):
    down = tmp_path / "no-server"
    down.mkdir()
    url = f"postgresql://lab:secret-pw@/lab?host={down}"
    j = tmp_path / "r.json"
    status = main(["sweep", "--device", "sim:loop", "--lengths", "512,2K", "--queue-depth", "1",
                   "--no-progress", "--json", str(j), "--store", url])
    _, err = capsys.readouterr()
    assert status == 2 and "secret-pw" not in err
    [line] = [line for line in err.splitlines() if line.startswith("busprobe: error:")]
    assert line.endswith(f"the run is kept in {j}: push it later with busprobe store push "
                         f"{j} --store 'postgresql://lab:***@/lab?host={down}'")
    assert load_results(j)["complete"] is True


def test_without_a_json_file_the_unpushed_run_is_kept_in_the_data_directory(
        loopback_device, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    down = tmp_path / "no-server"
    down.mkdir()
    status = main(["sweep", "--device", "sim:loop", "--lengths", "512", "--queue-depth", "1",
                   "--no-progress", "--store", f"postgresql:///lab?host={down}"])
    _, err = capsys.readouterr()
    assert status == 2
    [kept] = (tmp_path / "data" / "busprobe" / "unpushed").glob("*.json")
    assert f"the run is kept in {kept}" in err
    assert json.loads(kept.read_bytes())["run_id"] == kept.stem
