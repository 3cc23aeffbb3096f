"""Ceiling arithmetic against the figures in docs/DESIGN.md §6 and the spec."""

import pytest
from busprobe.model import ceiling_for, link_ceiling
from busprobe.model.pcie import PcieAssumptions
from busprobe.model.usb3 import DEVICE_RESPONSE_CYCLES, usb3_ceiling
from busprobe.transport import BusDescription


def usb2(host):
    return BusDescription("usb2-hs", "high", host_profile=host)


def pcie(gen=2, width=1, mps=128, mrrs=512, **extra):
    return BusDescription("pcie", f"gen{gen}", width, mps=mps, mrrs=mrrs, extra=extra)


@pytest.mark.parametrize("direction", ["in", "out"])
def test_usb2_ideal_profile_is_13_packets_of_512_per_microframe(direction):
    ceiling = ceiling_for(usb2("ideal"), direction)
    assert ceiling.throughput == 13 * 512 * 8000 == 53_248_000
    assert ceiling.parts["packets_per_uframe"] == 13
    assert "13 × 512 B × 8000" in ceiling.formula


@pytest.mark.parametrize(("host", "packets"), [("ehci", 10), ("xhci", 12)])
def test_usb2_host_profile_caps_packets_per_microframe(host, packets):
    ceiling = ceiling_for(usb2(host), "in")
    assert ceiling.throughput == packets * 512 * 8000
    assert ceiling.parts["profile_per_uframe"] == packets
    assert "host profile binds" in ceiling.formula


def test_usb2_link_ceiling_ignores_the_host_profile():
    assert link_ceiling(usb2("ehci"), "in").throughput == 53_248_000


def test_usb2_queue_depth_one_pays_turnaround_and_deep_queue_hides_it():
    qd1 = ceiling_for(usb2("ehci"), "in", length=16384, queue_depth=1)
    # 40 µs resubmit + 32 packets / 10 per µframe (400 µs) + 125 µs completion = 565 µs,
    # rounded up to whole microframes (completions land on boundaries) = 625 µs.
    assert qd1.parts["t_cycle"] == pytest.approx(625e-6)
    # The stepped schedule agrees here: 32 packets from a 40 µs phase span 4 microframes.
    assert qd1.throughput == pytest.approx(16384 / 625e-6, rel=1e-3)
    xhci = ceiling_for(usb2("xhci"), "in", length=16384, queue_depth=1)
    assert xhci.parts["t_cycle"] == pytest.approx(30e-6 + 32 / 12 * 125e-6 + 20e-6)
    qd4 = ceiling_for(usb2("ehci"), "in", length=16384, queue_depth=4)
    assert qd4.throughput == pytest.approx(40_960_000, rel=2e-3)


@pytest.mark.parametrize(("host", "length", "qd", "measured"), [
    # Host-timed figures of a simulated sweep (tests/fixtures/results/sim_usb2_*.json): where
    # the measurement window is long against one transfer, the model must agree within 0.5 %.
    ("ehci", 4096, 1, 16.39e6), ("ehci", 65536, 1, 37.48e6), ("ehci", 262144, 1, 39.59e6),
    ("xhci", 4096, 1, 32.87e6), ("xhci", 65536, 1, 47.88e6), ("xhci", 262144, 1, 48.88e6),
])
def test_usb2_per_transfer_term_matches_the_simulated_controller(host, length, qd, measured):
    ceiling = ceiling_for(usb2(host), "in", length=length, queue_depth=qd)
    assert ceiling.throughput == pytest.approx(measured, rel=5e-3)


def test_short_transfer_within_one_microframe_is_not_charged_a_whole_share():
    # 8 packets start 40 µs into a microframe and end inside it: 2 microframes per cycle, not 3.
    ceiling = ceiling_for(usb2("ehci"), "out", length=4096, queue_depth=1)
    assert ceiling.throughput == pytest.approx(4096 / 250e-6, rel=1e-3)
    assert "stepped schedule" in ceiling.formula


def test_usb2_short_transfer_pays_a_whole_packet_slot():
    one_byte = ceiling_for(usb2("ideal"), "in", length=513)
    assert one_byte.parts["packets"] == 2
    assert one_byte.throughput == pytest.approx(513 / (2 / 13 * 125e-6))


@pytest.mark.parametrize(("mps", "before_dllps"), [(128, 432), (256, 464), (512, 481)])
def test_pcie_gen2_x1_write_matches_design_figures(mps, before_dllps):
    ceiling = ceiling_for(pcie(mps=mps), "write")
    assert round(500 * ceiling.parts["tlp_efficiency"]) == before_dllps
    assert ceiling.parts["tlp_wire_bytes"] == mps + 20
    # SKP ordered sets cost about 0.3 %; the write direction carries no DLLPs of its own.
    assert ceiling.throughput == pytest.approx(before_dllps * 1e6 * 0.997, rel=2e-3)
    no_skp = ceiling_for(pcie(mps=mps, skp=False), "write")
    assert no_skp.throughput == pytest.approx(500e6 * mps / (mps + 20))


def test_pcie_known_skp_interval_and_periodic_updatefc_take_their_share_of_the_lane():
    # The soft endpoint's transmitter: a SKP set every 1200 symbol times, UpdateFC-P and -NP
    # every 30 µs (7500 symbol times at Gen1): 4/1200 + 16/7500 of the lane.
    spec = ceiling_for(pcie(gen=1), "write").throughput
    soft = ceiling_for(pcie(gen=1, skp_interval=1200, fc_update_us=30.0), "write")
    assert soft.throughput == pytest.approx(250e6 * (1 - 4 / 1200 - 16 / 7500) * 128 / 148)
    assert soft.throughput < spec * 0.998
    assert soft.parts["fc_update_fraction"] == pytest.approx(16 / 7500)
    assert "periodic UpdateFC 0.21 %" in soft.formula
    # Wider links stripe the DLLPs across lanes: the same bytes are a smaller share.
    x4 = ceiling_for(pcie(gen=1, width=4, fc_update_us=30.0), "write")
    assert x4.parts["fc_update_fraction"] == pytest.approx(16 / 30000)
    with pytest.raises(ValueError, match="SKP interval"):
        ceiling_for(pcie(gen=1, skp_interval=600), "write")


def test_pcie_generations_and_widths_scale_the_lane_rate():
    gen1 = ceiling_for(pcie(gen=1, skp=False), "write").throughput
    gen3x4 = ceiling_for(pcie(gen=3, width=4, skp=False), "write").throughput
    assert gen1 == pytest.approx(250e6 * 128 / 148)
    assert gen3x4 == pytest.approx(4 * 8e9 * 128 / 130 / 8 * 128 / 148)


def test_pcie_4dw_headers_and_ecrc_add_to_every_tlp():
    ceiling = ceiling_for(pcie(addr64=True, ecrc=True), "write")
    assert ceiling.parts["tlp_wire_bytes"] == 8 + 16 + 128 + 4


def test_pcie_read_completions_split_at_mps_or_rcb_each_with_a_header():
    at_mps = ceiling_for(pcie(mps=256, mrrs=512, skp=False), "read")
    assert at_mps.parts["completions_per_request"] == 2
    # 2 × 20 B completion overhead + 512 B data + ACK 8/4 + UpdateFC 8/4 downstream.
    assert at_mps.parts["downstream_bytes"] == pytest.approx(2 * 20 + 512 + 2 + 2)
    assert at_mps.throughput == pytest.approx(500e6 * 512 / 556)
    at_rcb = ceiling_for(pcie(mps=256, mrrs=512, skp=False, split_at_rcb=True), "read")
    assert at_rcb.parts["completions_per_request"] == 8
    assert at_rcb.throughput < at_mps.throughput


def test_pcie_dllp_ratios_are_parameters():
    rare = ceiling_for(pcie(skp=False, ack_every=0, updatefc_every=0), "read")
    assert rare.parts["downstream_bytes"] == 4 * 20 + 512
    assert rare.parts["assumptions"]["ack_every"] == 0


def test_pcie_read_latency_bounds_throughput_by_littles_law():
    ceiling = ceiling_for(pcie(read_latency_ns=2000, outstanding_reads=2, skp=False), "read")
    assert ceiling.throughput == pytest.approx(ceiling.parts["latency_bound"])
    assert ceiling.throughput < 2 * 512 / 2e-6


def test_pcie_link_ceiling_leaves_the_root_complex_latency_out():
    slow = pcie(read_latency_ns=4000, outstanding_reads=2, skp=False)
    assert ceiling_for(slow, "read").throughput < link_ceiling(slow, "read").throughput
    assert link_ceiling(slow, "read").throughput == pytest.approx(500e6 * 512 / 596)


def test_pcie_short_write_transfer_pays_a_header_per_partial_tlp():
    ceiling = ceiling_for(pcie(skp=False), "write", length=200)
    assert ceiling.parts["tlps"] == 2
    assert ceiling.throughput == pytest.approx(500e6 * 200 / (200 + 2 * 20))


def test_usb3_superspeed_data_packet_costs_1072_bytes():
    ceiling = usb3_ceiling(BusDescription("usb3-ss", "super"), "in")
    assert ceiling.parts["dp_wire_bytes"] == 1072
    assert 470e6 < ceiling.throughput < 500e6 * 1024 / 1072
    gapped = usb3_ceiling(BusDescription("usb3-ss", "super",
                                         extra={"max_burst": 1, "burst_gap_ns": 3000}), "in")
    assert gapped.throughput < ceiling.throughput / 2


def test_usb3_is_a_registered_bus_and_the_ideal_host_reaches_the_link():
    ceiling = ceiling_for(BusDescription("usb3-ss", "super", host_profile="ideal"), "in")
    assert ceiling.throughput == pytest.approx(474.8e6, rel=1e-3)
    assert not ceiling.parts["latency_bound"]
    # Dual simplex: each lane carries its DP and the other direction's handshakes (1108 B per
    # packet each way), not half the streamed rate as USB 2.0's half duplex.
    loop = ceiling_for(BusDescription("usb3-ss", "super", host_profile="ideal"), "loopback")
    assert loop.throughput == pytest.approx(459.4e6, rel=1e-3)
    assert loop.parts["pair_wire_bytes"] == 1108


def test_usb3_window_of_one_packet_is_one_dp_per_round_trip():
    # burst 1: the next DP waits for the ACK TP of the one before: DP + ACK TP at the raw lane
    # rate (SKP and ITP go in the idle), the host's answer and the device's measured one.
    bus = BusDescription("usb3-ss", "super", host_profile="ideal", extra={"max_burst": 1})
    ceiling = ceiling_for(bus, "in")
    assert ceiling.parts["latency_bound"] and ceiling.parts["max_burst"] == 1
    device_in = DEVICE_RESPONSE_CYCLES["in"] / 125e6
    assert ceiling.throughput == pytest.approx(1024 / ((1056 + 20) / 500e6 + device_in))
    # OUT: the host's LGOOD + LCRD for the device's ACK TP come before its next DP.
    device_out = DEVICE_RESPONSE_CYCLES["out"] / 125e6
    assert ceiling_for(bus, "out").throughput == pytest.approx(
        1024 / ((1056 + 20 + 16) / 500e6 + device_out))
    assert link_ceiling(bus, "in").throughput == pytest.approx(474.8e6, rel=1e-3)


def test_usb3_host_profile_windows_and_turnaround_are_the_models_source():
    vl805 = BusDescription("usb3-ss", "super", host_profile="vl805")
    out = ceiling_for(vl805, "out")
    assert out.parts["max_burst"] == 1 and out.parts["turnaround_ns"] == 2000.0
    assert out.throughput == pytest.approx(1024 / out.parts["round_trip_s"])
    assert ceiling_for(vl805, "in").parts["max_burst"] == 16  # the quirk is OUT only
    # A window of 2 covers a 1 µs turnaround: small-burst is still link-bound.
    assert not ceiling_for(BusDescription("usb3-ss", "super", host_profile="small-burst"),
                           "in").parts["latency_bound"]


@pytest.mark.parametrize(("bus", "direction", "message"), [
    (BusDescription("usb2-hs", "high"), "write", "does not exist"),
    (BusDescription("can", "x"), "in", "no ceiling model"),
    (BusDescription("pcie", "gen4", mps=128), "write", "generation"),
    (BusDescription("pcie", "gen2", 3, mps=128), "write", "width"),
    (BusDescription("pcie", "gen2", mps=100), "write", "MPS 100"),
    (BusDescription("pcie", "gen2", extra={"rcb": 32}), "read", "completion boundary"),
    (BusDescription("usb2-hs", "high", host_profile="nosuch"), "in", "unknown host profile"),
])
def test_bad_configurations_raise_one_line_value_errors(bus, direction, message):
    with pytest.raises(ValueError, match=message) as info:
        ceiling_for(bus, direction)
    assert "\n" not in str(info.value)


def test_assumptions_parse_strings_from_selector_options():
    a = PcieAssumptions.from_extra({"ack_every": "8", "split_at_rcb": "true", "other": 1})
    assert a.ack_every == 8 and a.split_at_rcb is True


def test_pcie_loopback_is_bound_by_the_more_loaded_lane():
    bus = BusDescription("pcie", "gen2", 1, mps=256, mrrs=512, extra={"skp": False})
    loop = ceiling_for(bus, "loopback")
    write, read = ceiling_for(bus, "write"), ceiling_for(bus, "read")
    # Upstream carries the written data plus the read requests, so loopback is below both.
    assert loop.throughput < min(write.throughput, read.throughput)
    assert loop.throughput == pytest.approx(500e6 / (276 / 256 + 24 / 512))
