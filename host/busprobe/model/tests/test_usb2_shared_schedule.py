"""Several USB 2.0 devices on one schedule (behind a hub, or on an EHCI controller's root ports,
issue 47.1): together they are held to what one microframe holds, each alone to its profile."""

import pytest
from busprobe.model.ceiling import ceiling_for
from busprobe.model.usb2 import usb2_shared_ceiling
from busprobe.model.usb2_hosts import load_profile
from busprobe.transport import BusDescription


def bus(profile):
    return BusDescription(kind="usb2-hs", speed="high", host_profile=profile)


def test_two_devices_on_one_ehci_schedule_fill_the_microframe_one_alone_does_not():
    alone = ceiling_for(bus("ehci"), "in").throughput
    together = usb2_shared_ceiling(bus("ehci"), "in", 2)
    assert alone == pytest.approx(10 * 512 * 8000)  # the profile's 10 per endpoint
    assert together.throughput == pytest.approx(13 * 512 * 8000)  # one bus: 53.248 MB/s
    assert together.parts["packets_per_uframe"] == 13 and "2 devices" in together.formula
    # OUT: what fits after SOF with EHCI's gap is 12, whoever's the packets are.
    assert usb2_shared_ceiling(bus("ehci"), "out", 2).throughput == pytest.approx(12 * 512 * 8000)
    assert usb2_shared_ceiling(bus("ehci"), "in", 1).throughput == pytest.approx(alone)


def test_only_ehci_of_the_built_in_profiles_runs_one_schedule_for_its_root_ports():
    assert load_profile("ehci").root_ports_share_schedule
    assert not load_profile("xhci").root_ports_share_schedule
    assert not load_profile("ideal").root_ports_share_schedule
    with pytest.raises(ValueError, match="in or out"):
        usb2_shared_ceiling(bus("ehci"), "loopback", 2)


def test_a_profile_file_without_the_shared_schedule_key_still_loads(tmp_path):
    from busprobe.model.usb2_hosts import PROFILE_DIR

    text = "\n".join(line for line in (PROFILE_DIR / "ehci.toml").read_text().splitlines()
                     if not line.startswith("root_ports_share_schedule"))
    path = tmp_path / "old.toml"
    path.write_text(text + "\n")
    profile = load_profile(str(path))
    assert profile.root_ports_share_schedule is False
    assert profile.max_bulk_in_per_uframe == 10


def test_busprobe_model_gives_two_devices_on_ehci_root_ports_one_bus_together(capsys):
    import json

    from busprobe.cli import main

    assert main(["model", "--device", "sim:usb2?devices=2&attach=ports&host=ehci",
                 "--direction", "in", "--json", "-"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["ceilings"]
    assert entry["ceiling"]["throughput"] == pytest.approx(10 * 512 * 8000)  # each alone
    assert entry["together"]["throughput"] == pytest.approx(13 * 512 * 8000)  # one bus
    assert main(["model", "--device", "sim:usb2?devices=2&attach=ports&host=xhci",
                 "--direction", "in"]) == 0
    assert "together" not in capsys.readouterr().out  # xHCI: a bus per root port
