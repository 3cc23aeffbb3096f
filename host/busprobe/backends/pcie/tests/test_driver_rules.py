"""Descriptor splitting and telemetry decoding (pure functions of the driver).

The driver's data path is tested against the simulated device in
``sim/pcie/tests/test_sim_backend.py``; these are the rules it applies before any DMA.
"""

import pytest
from busprobe.backends.pcie.driver import decode_telemetry, split_transfer
from busprobe.backends.pcie.platform import DESC_CHUNK
from busprobe.backends.pcie.read_path import ReadPath, describe_link_errors
from busprobe.protocol import pcie as proto
from busprobe.transport import DeviceGone, InvalidRequest, TransferTimeout


def test_one_descriptor_per_transfer_whose_requests_never_cross_a_4k_boundary():
    descs = split_transfer(0x1000_0E00, 0x2400)
    assert descs == [(0x1000_0E00, 0x2400)]
    # The core cuts requests every MPS/MRRS bytes from the descriptor's start.
    for size in (128, 256, 512):
        for offset in range(0, 0x2400, size):
            a = 0x1000_0E00 + offset
            assert a // 4096 == (a + min(size, 0x2400 - offset) - 1) // 4096


def test_a_transfer_past_the_length_field_is_cut_where_the_next_stays_aligned():
    length = DESC_CHUNK + 4096
    descs = split_transfer(0, length)
    assert [n for _, n in descs] == [DESC_CHUNK, 4096]
    assert all(a % proto.DMA_ADDRESS_ALIGN == 0 and n <= proto.DESC_MAX_LENGTH for a, n in descs)


def test_length_must_be_a_multiple_of_the_datapath_width():
    with pytest.raises(InvalidRequest, match="not a positive multiple of 8 bytes.*#97"):
        split_transfer(0, 4100)


def test_buffer_must_be_aligned_as_the_core_needs():
    with pytest.raises(InvalidRequest, match="not 512-byte aligned"):
        split_transfer(0x1000_0100, 4096)


def counters(**values):
    raw = {name: 0 for name, _ in proto.TELEMETRY}
    raw["first_error_offset"] = proto.NO_ERROR_OFFSET
    raw.update(values)
    return raw


def test_device_time_from_cycle_counters_wraps():
    tel = decode_telemetry(counters(wr_first_cycle=0xFFFF_FF00, wr_last_cycle=0x0000_00FF,
                                    wr_bytes=4096), 125_000_000)
    assert tel.device_seconds["write"] == pytest.approx(0x200 / 125e6)
    assert tel.device_throughput("write") == pytest.approx(4096 / (0x200 / 125e6))


def test_read_errors_counted_since_the_last_clear():
    tel = decode_telemetry(counters(pattern_errors=5, first_error_offset=40), 125e6,
                           errors_before=3)
    assert tel.errors["read"] == 2 and tel.first_error_offset["read"] is None  # not this point's
    tel = decode_telemetry(counters(pattern_errors=1, first_error_offset=40), 125e6)
    assert tel.errors["read"] == 1 and tel.first_error_offset["read"] == 40


def test_latency_in_nanoseconds_and_backpressure_named():
    tel = decode_telemetry(counters(rd_latency_min=50, rd_latency_max=150, rd_latency_sum=400,
                                    rd_latency_count=4, tx_stall_cycles=7,
                                    rd_outstanding_max=6), 125_000_000)
    assert tel.raw["rd_latency_ns"] == {"min": 400.0, "mean": 800.0, "max": 1200.0}
    assert (tel.raw["backpressure_cycles"], tel.raw["tag_high_water"]) == (7, 6)


def test_link_faults_are_every_directions_errors_and_named_in_the_telemetry():
    tel = decode_telemetry(counters(rd_cpl_unexpected=2, rx_malformed=1, rd_cpl_discarded=5,
                                    pattern_errors=3), 125e6)
    assert tel.raw["link_errors"] == {"rd_cpl_unexpected": 2, "rx_malformed": 1}
    assert tel.errors == {"write": 3, "read": 6, "loopback": 3}
    clean = decode_telemetry(counters(), 125e6)
    assert clean.errors == {"write": 0, "read": 0, "loopback": 0}
    assert clean.raw["link_errors"] == {}


def test_link_faults_are_described_in_words():
    assert describe_link_errors({"rx_poisoned": 1, "rd_cpl_timeouts": 2}) == (
        "1 poisoned TLP, 2 completion timeouts")
    assert describe_link_errors({}) == "no link fault counted"


class _StatusBar:
    """A BAR whose ``rd_status`` always reads ``status``."""

    def __init__(self, status):
        self.status, self.reads = status, 0

    def read32(self, offset):
        assert offset == proto.csr("busprobe_rd_status")
        self.reads += 1
        return self.status


def test_a_read_path_reset_that_never_ends_is_an_error_not_a_hang():
    bar = _StatusBar(proto.RD_RESET_PENDING)
    with pytest.raises(TransferTimeout, match="read path reset did not complete"):
        ReadPath(bar).wait_reset()
    assert bar.reads == 1000
    with pytest.raises(DeviceGone, match="all ones"):
        ReadPath(_StatusBar(0xFFFF_FFFF)).wait_reset()
    ReadPath(_StatusBar(proto.RD_FAILED)).wait_reset()  # done: the failure flag is not pending
