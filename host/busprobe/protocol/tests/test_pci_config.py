"""PCI config-space decoding: capability walk, PCIe capability registers, size codes, BDFs."""

import pytest
from busprobe.backends.pcie.sysfs_tree import ConfigSpec, make_config_space
from busprobe.protocol.pci_config import (
    BDF_RE,
    PCI_CAP_ID_EXP,
    PcieCapability,
    decode_size,
    encode_size,
    find_capability,
)


def test_capability_decoded_from_config_bytes():
    cap = PcieCapability.parse(make_config_space(ConfigSpec(mps_supported=1024, mps=256,
                                                            mrrs=2048, link_speed="gen3",
                                                            link_width=4)))
    assert (cap.mps_supported, cap.mps, cap.mrrs) == (1024, 256, 2048)
    assert (cap.link_speed, cap.link_width, cap.link_up) == ("gen3", 4, True)


def test_looping_capability_list_ends_without_finding_anything():
    config = bytearray(256)
    config[0x06] = 0x10  # Status: capability list present
    config[0x34] = 0x40
    config[0x40:0x42] = bytes([0x01, 0x50])  # PM -> 0x50
    config[0x50:0x52] = bytes([0x05, 0x40])  # MSI -> back to 0x40
    assert find_capability(bytes(config), PCI_CAP_ID_EXP) is None
    assert PcieCapability.parse(bytes(config)) is None


def test_config_space_cut_at_64_bytes_has_no_capability():
    config = make_config_space(ConfigSpec())[:64]
    assert PcieCapability.parse(config) is None


@pytest.mark.parametrize("size", [128, 256, 512, 1024, 2048, 4096])
def test_size_codes_round_trip(size):
    assert decode_size(encode_size(size)) == size


@pytest.mark.parametrize("size", [0, 64, 384, 8192])
def test_size_that_no_field_can_hold_is_a_value_error(size):
    with pytest.raises(ValueError, match="must be one of 128"):
        encode_size(size)


def test_bdf_pattern_is_sysfs_spelling():
    assert BDF_RE.match("0000:01:00.0")
    assert not BDF_RE.match("01:00.0") and not BDF_RE.match("0000:01:00.8")
