"""busprobe model and busprobe topology through the real argument parser (no simulator starts)."""

import json

import pytest
from busprobe.cli import main
from busprobe.targets import describe


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_model_ehci_shows_profile_and_link_with_formula(capsys):
    status, out, _ = run(capsys, "model", "--device", "sim:usb2?host=ehci", "--formula")
    assert status == 0
    assert "in: 40.96 MB/s" in out and "the link alone allows 53.25 MB/s" in out
    assert "10 × 512 B × 8000 µframe/s = 40.960 MB/s" in out
    assert "13 × 512 B × 8000 µframe/s = 53.248 MB/s" in out


def test_model_pcie_mps_list_in_mib(capsys):
    status, out, _ = run(capsys, "model", "--device", "sim:pcie?gen=2&width=1",
                         "--mps", "128,256,512", "--direction", "write", "--units", "mib")
    assert status == 0
    assert [line.split()[1] for line in out.splitlines() if "write:" in line] == \
        ["412.40", "442.28", "458.91"]
    assert out.count("MiB/s") == 3


def test_model_json_carries_formula_and_parts(capsys):
    _, out, _ = run(capsys, "model", "--device", "sim:pcie?gen=3&width=1&mps=256", "--json")
    doc = json.loads(out)
    write = next(c for c in doc["ceilings"] if c["direction"] == "write")
    assert write["ceiling"]["parts"]["tlp_wire_bytes"] == 276
    assert doc["bus"]["speed"] == "gen3"


def test_model_per_transfer_term(capsys):
    _, out, _ = run(capsys, "model", "--device", "sim:usb2?host=ehci", "--length", "16K",
                    "--queue-depth", "1", "--direction", "in")
    assert "in: 26.21 MB/s" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["model", "--device", "sim:pcie?gen=7"], "sim:pcie option gen='7': gen must be 1, 2 or 3"),
    (["model", "--device", "sim:pcie?mps=100"], "mps='100': mps must be 128, 256 or 512"),
    (["model", "--device", "sim:pcie", "--mps", "100"], "mps='100': mps must be 128, 256 or 512"),
    (["model", "--device", "sim:pcie", "--mps", "4096"], "mps must be 128, 256 or 512"),
    (["model", "--device", "sim:pcie", "--mrrs", "64"], "mrrs must be 128, 256, 512, 1024"),
    (["model", "--device", "sim:usb2?host=nosuch"], "unknown host profile"),
    (["model", "--device", "sim:usb2", "--mps", "128"], "PCIe devices only"),
    (["model", "--device", "sim:pcie", "--direction", "in"], "does not exist on pcie"),
    (["model", "--device", "bogus"], "bad device selector"),
    (["topology", "--device", "pcie:0000:7f:00.0"], "no PCI device"),
])
def test_bad_input_is_one_line_error(capsys, argv, message):
    status, _, err = run(capsys, *argv)
    assert status == 2 and message in err and err.count("\n") == 1


def test_sim_selector_options_become_the_simulated_links_assumptions():
    bus = describe("sim:pcie?gen=1&cap=304087040&latency_ns=800").bus
    assert (bus.speed, bus.width, bus.mps, bus.mrrs) == ("gen1", 1, 256, 512)
    assert bus.extra == {"rcb": 64, "cap": 304087040.0, "latency_ns": 800.0,
                         "driver_latency_ns": 0.0, "simulated": True,
                         "skp": False, "ack_every": 1, "updatefc_every": 1,
                         "split_at_rcb": False, "read_latency_ns": 800.0, "outstanding_reads": 8,
                         "tx_buffer_tlps": 4}


def test_sim_pcie_read_latency_bounds_the_config_ceiling_not_the_link(capsys):
    _, out, _ = run(capsys, "model", "--device", "sim:pcie?latency_ns=4000", "--direction",
                    "read")
    # 8 tags × 512 B / (4 µs + 1.14 µs on the lane) = 0.80 GB/s: the link (451 MB/s, one ACK and
    # one UpdateFC per read request on the completion lane) still binds.
    assert "read: 450.70 MB/s" in out
    _, out, _ = run(capsys, "model", "--device", "sim:pcie?latency_ns=20000", "--direction",
                    "read")
    assert "read: 193.79 MB/s" in out and "the link alone allows 450.70 MB/s" in out


def test_topology_cli_prints_sim_hops(capsys):
    status, out, _ = run(capsys, "topology", "--device", "sim:pcie?gen=2&cap=304087040")
    assert status == 0 and "cocotbext-pcie root complex" in out and "304.1 MB/s" in out
