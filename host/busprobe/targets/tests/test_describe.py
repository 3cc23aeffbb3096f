"""Selector descriptions: typed options with defaults, strict refusals, the bus and hops."""

import shutil

import pytest
from busprobe.model.usb2_hosts import PROFILE_DIR
from busprobe.selectors import UsbTarget
from busprobe.targets import describe
from busprobe.transport import InvalidRequest


def test_sim_pcie_defaults_are_the_simulated_links_defaults():
    target = describe("sim:pcie")
    assert dict(target.options) == {"gen": 2, "width": 1, "mps": 256, "mrrs": 512, "rcb": 64,
                                    "cap": None, "latency_ns": 0.0, "driver_latency_ns": 0.0,
                                    "endpoints": 1, "phy": "sim", "partner": "present"}
    assert target.simulated and target.spec.kind == "pcie"
    bus = target.bus
    assert (bus.kind, bus.speed, bus.width, bus.mps, bus.mrrs) == ("pcie", "gen2", 1, 256, 512)
    assert bus.extra == {"rcb": 64, "cap": None, "latency_ns": 0.0, "driver_latency_ns": 0.0,
                         "simulated": True,
                         "skp": False, "ack_every": 1, "updatefc_every": 1,
                         "split_at_rcb": False, "read_latency_ns": 0.0, "outstanding_reads": 8,
                                     "tx_buffer_tlps": 4}


def test_sim_pcie_options_are_typed_and_reach_bus_and_hops():
    target = describe("sim:pcie?gen=3&mps=512&mrrs=4096&rcb=128&cap=3e8&latency_ns=1e9")
    assert (target.bus.speed, target.bus.mps, target.bus.mrrs) == ("gen3", 512, 4096)
    assert target.bus.extra["rcb"] == 128 and target.bus.extra["cap"] == 3e8
    assert target.bus.extra["read_latency_ns"] == 1e9
    root, device = target.hops_json()
    assert (root["kind"], device["kind"]) == ("sim-pci-root-port", "sim-pci-endpoint")
    assert (device["speed"], device["width"], device["mps"], device["mrrs"]) == \
        ("gen3", 1, 512, 4096)
    assert root["notes"] == ["root complex accepts at most 300.0 MB/s (simulated chipset cap)",
                             "memory read latency 1e+09 ns (simulated)"]


def test_sim_usb3_primes_reach_the_bus_and_the_host_hop():
    """How the simulated xHCI primes stream endpoints is the bus's (the UAS ceiling reads
    it) and the host hop says so; named by default."""
    assert describe("sim:usb3").bus.extra["primes"] == "named"
    target = describe("sim:usb3?design=storage&primes=pipe")
    assert target.bus.extra["primes"] == "pipe"
    assert target.hops_json()[0]["description"].endswith(", pipe primes")


def test_sim_pcie_on_the_soft_endpoint_is_gen1_with_skp_in_the_ceiling():
    target = describe("sim:pcie?phy=ecp5&gen=1&mps=128")
    assert target.options["phy"] == "ecp5"
    assert (target.bus.speed, target.bus.mps) == ("gen1", 128)
    assert target.bus.extra["skp"] is True
    assert "soft Gen1 x1 endpoint" in target.hops_json()[1]["description"]


@pytest.mark.parametrize(("selector", "message"), [
    ("sim:pcie?gen=9", "sim:pcie option gen='9': gen must be 1, 2 or 3"),
    ("sim:pcie?gen=2.0", "sim:pcie option gen='2.0': gen must be 1, 2 or 3"),
    ("sim:pcie?gen=0x2", "sim:pcie option gen='0x2': gen must be 1, 2 or 3"),
    ("sim:pcie?width=16", "sim:pcie option width='16': width must be 1 (the gateware is x1)"),
    ("sim:pcie?mps=300", "sim:pcie option mps='300': mps must be 128, 256 or 512"),
    ("sim:pcie?mps=1024", "sim:pcie option mps='1024': mps must be 128, 256 or 512"),
    ("sim:pcie?mrrs=8192", "mrrs='8192': mrrs must be 128, 256, 512, 1024, 2048 or 4096"),
    ("sim:pcie?rcb=32", "sim:pcie option rcb='32': rcb must be 64 or 128"),
    ("sim:pcie?cap=-5", "option cap='-5': cap must be a finite number of bytes/s above 0"),
    ("sim:pcie?cap=0", "option cap='0': cap must be a finite number"),
    ("sim:pcie?cap=nan", "option cap='nan': cap must be a finite number"),
    ("sim:pcie?cap=inf", "option cap='inf': cap must be a finite number"),
    ("sim:pcie?cap=", "option cap='': cap must be a finite number"),
    ("sim:pcie?latency_ns=-1", "latency_ns='-1': latency_ns must be a finite number of ns from 0"),
    ("sim:pcie?latency_ns=1e30", "latency_ns='1e30': latency_ns must be a finite number of ns"),
    ("sim:pcie?latency_ns=nan", "latency_ns='nan': latency_ns must be a finite number of ns"),
    ("sim:pcie?mps=128&mps=256", "sim:pcie option mps given more than once (mps=128, mps=256)"),
    ("sim:pcie?bogus=1&x=2", "sim:pcie: unknown option(s) bogus, x (it takes gen, width, mps,"),
    ("sim:pcie?gen", "bad options 'gen' in selector 'sim:pcie?gen'"),
    ("sim:pcie?phy=xilinx", "sim:pcie option phy='xilinx': phy must be sim or ecp5"),
    ("sim:pcie?phy=ecp5", "sim:pcie option phy=ecp5: the soft endpoint is Gen1 (add gen=1)"),
    ("sim:pcie?partner=silent", "sim:pcie option partner: only with phy=ecp5 (the symbol-level "
                                "link)"),
    ("sim:pcie?phy=ecp5&gen=1&cap=1e8&endpoints=2",
     "sim:pcie option phy=ecp5: not with cap, endpoints"),
    ("sim:usb2?host=nope", "sim:usb2 option host='nope': unknown host profile 'nope'"),
    ("sim:usb2?design=x",
     "sim:usb2 option design='x': design must be busprobe, full, stock or storage"),
    ("sim:usb2?speed=full", "sim:usb2: unknown option(s) speed (it takes host, design, level, "
                            "devices, attach)"),
    ("sim:usb2?devices=3", "sim:usb2 option devices='3': devices must be 1 or 2"),
    ("sim:usb2?level=gates", "sim:usb2 option level='gates': level must be rtl or netlist"),
    ("sim:usb3?burst=17", "sim:usb3 option burst='17': burst must be a whole number of "
                          "packets, 1..16"),
    ("sim:usb3?burst=x", "sim:usb3 option burst='x': burst must be a whole number"),
    ("sim:usb3?host=nope", "sim:usb3 option host='nope': unknown USB3 host profile 'nope'"),
    ("sim:usb3?design=x",
     "sim:usb3 option design='x': design must be busprobe, storage or streams"),
    ("sim:usb3?primes=x", "sim:usb3 option primes='x': primes must be named or pipe"),
    ("sim:usb3?speed=x",
     "sim:usb3: unknown option(s) speed (it takes host, burst, design, level, primes)"),
    ("sim:usb4", "no simulated target 'usb4' (available: pcie, usb2, usb3)"),
    ("usb:1209:0001?speed=high", "usb:1209:0001: unknown option(s) speed (it takes no options)"),
    ("usb:1209", "bad USB selector usb:1209: expected usb:VID:PID[#SERIAL]"),
    ("pcie:01:00.0", "bad PCI address '01:00.0': expected DDDD:BB:DD.F"),
    ("pcie:0000:01:00.0?allow_config_write=2", "allow_config_write must be 0, 1, no or yes"),
    ("tcp:1.2.3.4", "bad device selector 'tcp:1.2.3.4': expected usb:VID:PID[#SERIAL], "
                    "pcie:DDDD:BB:DD.F, block:/dev/sdX or sim:usb2|usb3|pcie[?key=value&...]"),
])
def test_a_bad_selector_is_one_line_naming_what_is_wrong_and_what_is_allowed(selector, message):
    with pytest.raises(InvalidRequest) as info:
        describe(selector, sysfs_root=None)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_sim_usb2_defaults_and_its_bus_and_hops():
    target = describe("sim:usb2?host=ehci")
    assert dict(target.options) == {"host": "ehci", "design": "busprobe", "level": "rtl",
                                    "devices": 1, "attach": "hub"}
    bus = target.bus
    assert (bus.kind, bus.speed, bus.host_profile, bus.max_packet_size) == \
        ("usb2-hs", "high", "ehci", 512)
    assert bus.extra == {"simulated": True, "design": "busprobe", "level": "rtl"}
    assert [hop.kind for hop in target.hops] == ["sim-usb-host-controller", "sim-usb-device"]
    assert "host profile ehci" in target.hops[0].description
    assert "stock LUNA" in describe("sim:usb2?design=stock").hops[-1].name
    netlist = describe("sim:usb2?design=full&level=netlist")
    assert netlist.bus.extra["level"] == "netlist"
    assert "gate-level netlist of the cynthion-r1.4 build" in netlist.hops[-1].description


def test_a_host_profile_file_is_checked_by_loading_it(tmp_path):
    good = tmp_path / "mine.toml"
    shutil.copy(PROFILE_DIR / "ehci.toml", good)
    assert describe(f"sim:usb2?host={good}").bus.host_profile == str(good)
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 'bad'\nnonsense = 1\n")
    with pytest.raises(InvalidRequest, match=r"option host='.*bad.toml': host profile .* "
                                             r"unknown key\(s\) nonsense"):
        describe(f"sim:usb2?host={bad}")


def test_real_devices_without_sysfs_are_described_by_their_selector_alone():
    usb = describe("usb:1209:0001#BP2-0001", sysfs_root=None)
    assert usb.address == UsbTarget(0x1209, 0x0001, "BP2-0001") and not usb.simulated
    assert (usb.bus, usb.hops, usb.target, dict(usb.options)) == (None, (), "1209:0001#BP2-0001",
                                                                  {})
    with pytest.raises(InvalidRequest, match="bus is unknown until it is opened"):
        usb.require_bus()
    pcie = describe("pcie:0000:0A:00.0?allow_config_write=1", sysfs_root=None)
    assert pcie.address == pcie.target == "0000:0a:00.0"
    assert pcie.options == {"allow_config_write": True} and pcie.spec.kind == "pcie"
