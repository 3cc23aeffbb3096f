"""The USB3 contract: one request set with USB2, its own INFO and telemetry, and they round-trip."""

import struct

import pytest
from busprobe.protocol import usb2, usb3


def test_requests_are_the_usb2_requests():
    assert usb3.Request is usb2.Request
    assert usb3.encode_in_transfer is usb2.encode_in_transfer


def test_info_shares_the_usb2_prefix_and_tells_the_devices_apart():
    info = usb3.pack_info()
    assert len(info) == usb3.INFO_SIZE
    magic, version, mps = struct.unpack_from(usb2.INFO_HEAD_FORMAT, info)
    assert usb2.INFO_FORMAT.startswith(usb2.INFO_HEAD_FORMAT)
    assert usb3.INFO_FORMAT.startswith(usb2.INFO_HEAD_FORMAT)
    assert (magic, mps) == (usb3.MAGIC, 1024) and magic != usb2.MAGIC
    decoded = usb3.unpack_info(info)
    assert decoded["max_burst_packets"] == usb3.MAX_BURST + 1 == 16
    assert decoded["clock_hz"] == 125_000_000
    with pytest.raises(ValueError, match="magic"):
        usb3.unpack_info(struct.pack(usb3.INFO_FORMAT, usb2.MAGIC, 3, 512, 1, 1, 60_000_000, 0))


def test_info_names_the_null_disk_and_an_older_device_has_no_features():
    assert usb3.unpack_info(usb3.pack_info(usb2.Feature.STORAGE))["features"] \
        == usb2.Feature.STORAGE
    older = usb3.pack_info()[:usb3.INFO_V2_SIZE]
    assert usb3.unpack_info(older)["features"] == usb2.NO_FEATURES


def test_telemetry_round_trips_and_checks_magic():
    values = {name: i * 7 for i, (name, _) in enumerate(usb3.TELEMETRY)}
    values["magic"] = usb3.MAGIC
    assert usb3.unpack_telemetry(usb3.pack_telemetry(values)) == values
    with pytest.raises(ValueError, match="USB3"):
        usb3.unpack_telemetry(usb3.pack_telemetry({**values, "magic": usb2.MAGIC}))


def test_absent_telemetry_words_take_their_initial_values():
    raw = usb3.unpack_telemetry(usb3.pack_telemetry({}))
    assert raw["first_error_offset"] == usb3.NO_ERROR_OFFSET
    assert raw["out_nump_min"] == 0xFFFF_FFFF and raw["in_bytes"] == 0


def test_telemetry_names_are_unique_described_and_indexed():
    names = [name for name, _ in usb3.TELEMETRY]
    assert len(names) == len(set(names))
    assert all(description for _, description in usb3.TELEMETRY)
    assert [usb3.TELEMETRY_INDEX[name] for name in names] == list(range(len(names)))


def test_device_window_wraps_and_needs_whole_intervals():
    raw = usb3.unpack_telemetry(usb3.pack_telemetry({
        "in_window_start_interval": 0xFFFF_FFFE, "in_window_end_interval": 2,
        "in_window_start_bytes": 0xFFFF_FC00, "in_window_end_bytes": 3 << 20}))
    moved, seconds = usb3.device_window(raw, "in")
    assert moved == (3 << 20) + 1024 and seconds == pytest.approx(4 / 8000)
    assert usb3.device_window(raw, "out") is None
