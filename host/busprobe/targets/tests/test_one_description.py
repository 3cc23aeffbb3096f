"""One selector, one meaning: ``busprobe model``, ``busprobe topology`` and the sweep agree.

For every simulated selector the README and the Makefile's demo show, the ceilings ``busprobe
model`` prints are the ones a sweep computes from its transport's bus (the transport is built from
the description and never opened: no simulator starts). For bad selectors, the three commands
refuse with the same one line, the sweep before any simulator is built.
"""

import json
import re
from pathlib import Path

import pytest
from busprobe import targets
from busprobe.cli import main
from busprobe.model import ceiling_for, link_ceiling

ROOT = Path(__file__).resolve().parents[4]
_SIM_SELECTOR = re.compile(r"sim:[a-z0-9]+(?:\?[^\s\"'`\[\]|#;]*)?")


def documented_sim_selectors():
    """Concrete ``sim:`` selectors in README.md and the Makefile (syntax summaries such as
    ``sim:pcie[?gen=1|2|3...]`` yield their bare target)."""
    texts = [path.read_text() for path in (ROOT / "README.md", ROOT / "Makefile")
             if path.exists()]
    return sorted({match for text in texts for match in _SIM_SELECTOR.findall(text)})


DOCUMENTED = documented_sim_selectors()
#: One target each: ``endpoints=N`` / ``devices=N`` (N > 1) name several, which only ``sweep``
#: opens (their alone/together runs are checked by the multi-target tests).
SINGLE = [s for s in DOCUMENTED if not re.search(r"(endpoints|devices)=([2-9]|\d\d)", s)]


@pytest.fixture
def no_simulator(monkeypatch, tmp_path):
    """Fails the test if a simulator process is started or a transport opened. Runs in a
    folder holding the host-profile files the documented selectors name (``host=myhost.toml``,
    which the README has the user write with ``busprobe fit``), as copies of a shipped one."""
    from busprobe.model.usb2_hosts import PROFILE_DIR
    from busprobe.sim.simulator import SimServer

    for name in {m for s in DOCUMENTED for m in re.findall(r"host=([\w.-]+\.toml)", s)}:
        (tmp_path / name).write_text((PROFILE_DIR / "xhci.toml").read_text())
    monkeypatch.chdir(tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError("a simulator was started")

    monkeypatch.setattr(SimServer, "__init__", refuse)
    opened = []
    real_open = targets.open_transport

    def open_transport(target):
        opened.append(target)
        return real_open(target)

    monkeypatch.setattr(targets, "open_transport", open_transport)
    return opened


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_the_readme_and_the_demo_show_both_simulated_buses():
    assert {"sim:pcie", "sim:usb2", "sim:usb2?host=ehci", "sim:usb2?host=xhci"} <= \
        set(DOCUMENTED)
    assert any(s.startswith("sim:pcie?") for s in DOCUMENTED)


@pytest.mark.parametrize("selector", SINGLE)
def test_model_prints_the_ceilings_the_sweep_computes(selector, capsys, no_simulator):
    status, out, err = run(capsys, "model", "--device", selector, "--json")
    assert status == 0, err
    printed = json.loads(out)
    transport = targets.open_transport(targets.describe(selector))  # built, not opened
    bus = transport.bus
    assert printed["bus"] == bus.to_json()
    directions = [entry["direction"] for entry in printed["ceilings"]]
    assert tuple(directions) == transport.directions
    for entry in printed["ceilings"]:
        direction = entry["direction"]
        assert entry["ceiling"]["throughput"] == ceiling_for(bus, direction).throughput
        assert entry["link"]["throughput"] == link_ceiling(bus, direction).throughput


@pytest.mark.parametrize("selector", SINGLE)
def test_topology_prints_the_hops_the_sweep_records(selector, capsys, no_simulator):
    status, out, err = run(capsys, "topology", "--device", selector, "--json")
    assert status == 0, err
    transport = targets.open_transport(targets.describe(selector))
    assert json.loads(out) == transport.topology()


@pytest.mark.parametrize(("selector", "message"), [
    ("sim:pcie?gen=9", "gen='9': gen must be 1, 2 or 3"),
    ("sim:pcie?mps=300", "mps='300': mps must be 128, 256 or 512"),
    ("sim:pcie?width=16", "width='16': width must be 1"),
    ("sim:pcie?cap=-5", "cap='-5': cap must be a finite number of bytes/s above 0"),
    ("sim:pcie?cap=nan", "cap='nan': cap must be a finite number of bytes/s above 0"),
    ("sim:pcie?latency_ns=1e30", "latency_ns='1e30': latency_ns must be a finite number of ns"),
    ("sim:pcie?mps=128&mps=256", "option mps given more than once"),
    ("sim:pcie?bogus=1", "sim:pcie: unknown option(s) bogus"),
    ("sim:usb2?host=nope", "sim:usb2 option host='nope': unknown host profile 'nope'"),
    ("sim:usb2?design=x",
     "sim:usb2 option design='x': design must be busprobe, full, stock or storage"),
    ("sim:usb3?burst=0", "sim:usb3 option burst='0': burst must be a whole number"),
    ("sim:usb4", "no simulated target 'usb4'"),
])
def test_model_topology_and_sweep_refuse_a_bad_selector_with_the_same_line(
        selector, message, capsys, tmp_path, no_simulator):
    result = tmp_path / "r.json"
    errors = []
    for argv in (["model", "--device", selector], ["topology", "--device", selector],
                 ["sweep", "--device", selector, "--json", str(result)]):
        status, out, err = run(capsys, *argv)
        assert (status, out) == (2, ""), argv
        errors.append(err)
    assert errors[0] == errors[1] == errors[2]
    assert errors[0].startswith("busprobe: error: ") and errors[0].count("\n") == 1
    assert message in errors[0]
    assert not no_simulator and not result.exists()
