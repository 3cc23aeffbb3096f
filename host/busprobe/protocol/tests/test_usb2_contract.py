"""The USB2 contract's encodings round-trip and refuse what the device cannot represent."""

import pytest
from busprobe.protocol import usb2


@pytest.mark.parametrize("length,zlp", [(0, False), (1000, False), (4 << 20, True), (512, True)])
def test_in_transfer_argument_round_trips(length, zlp):
    assert usb2.decode_in_transfer(*usb2.encode_in_transfer(length, zlp)) == (length, zlp)


def test_in_transfer_length_out_of_range_is_refused():
    with pytest.raises(ValueError):
        usb2.encode_in_transfer(1 << 31)


def test_telemetry_round_trips_and_checks_magic():
    values = {name: i * 7 for i, (name, _) in enumerate(usb2.TELEMETRY)}
    values["magic"] = usb2.MAGIC
    assert usb2.unpack_telemetry(usb2.pack_telemetry(values)) == values
    values["magic"] = 0
    with pytest.raises(ValueError, match="magic"):
        usb2.unpack_telemetry(usb2.pack_telemetry(values))


def test_telemetry_names_are_unique_and_described():
    names = [name for name, _ in usb2.TELEMETRY]
    assert len(names) == len(set(names))
    assert all(description for _, description in usb2.TELEMETRY)
    assert usb2.TELEMETRY_SIZE == 4 * len(names)


@pytest.mark.parametrize("features", [usb2.NO_FEATURES, usb2.Feature.BOT, usb2.ALL_FEATURES])
def test_info_round_trips_the_features(features):
    info = usb2.unpack_info(usb2.pack_info(features))
    assert info == {"magic": usb2.MAGIC, "version": usb2.PROTOCOL_VERSION,
                    "max_packet_size": usb2.MAX_PACKET_SIZE, "features": features}
    with pytest.raises(ValueError, match="INFO is 8 bytes"):
        usb2.unpack_info(usb2.pack_info(features)[:usb2.INFO_HEAD_SIZE])


def test_present_words_leave_out_exactly_the_groups_not_built():
    names = [name for name, _ in usb2.TELEMETRY]
    assert usb2.present_words(usb2.ALL_FEATURES) == tuple(names)
    lean = usb2.present_words(usb2.NO_FEATURES)
    grouped = [name for words in usb2.FEATURE_WORDS.values() for name in words]
    assert len(grouped) == len(set(grouped)) and set(grouped) <= set(names)
    assert set(lean) == set(names) - set(grouped)
    # BOT adds no word: its CSW carries the status.
    assert usb2.present_words(usb2.Feature.BOT) == lean
    assert "rx_packets" in usb2.present_words(usb2.Feature.RX_DROPS)
    assert "pings" not in usb2.present_words(usb2.Feature.RX_DROPS)
