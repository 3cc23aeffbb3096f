"""``--min-transfers``: a repeat's floor of transfers, for a slow host such as an emulator."""

import json

import pytest
from busprobe.cli import main


@pytest.mark.parametrize("value", ["0", "70000"])
def test_min_transfers_out_of_range_is_one_line_before_anything_opens(capsys, value):
    assert main(["sweep", "--device", "sim:usb2", "--min-transfers", value]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--min-transfers must be 1..65536" in err[0], err


@pytest.mark.sim
def test_min_transfers_one_makes_a_queue_depth_one_repeat_a_single_transfer(capfd):
    # 64 KiB: a millisecond of simulated bus time (the simulation's own floor) is one transfer.
    status = main(["sweep", "--device", "sim:usb2", "--direction", "in", "--lengths", "64K",
                   "--queue-depth", "1,2", "--min-bytes", "1", "--min-transfers", "1",
                   "--no-progress", "--json", "-"])
    out, err = capfd.readouterr()
    assert status == 0, err
    doc = json.loads(out)
    assert [(p["queue_depth"], p["transfers"]) for p in doc["points"]] == [(1, 1), (2, 2)]
    assert doc["plan"]["min_transfers"] == 1 and doc["errors"] == 0
