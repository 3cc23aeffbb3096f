"""The block sweep on a real block device (a loop device over a null-disk image, described by a
fixture sysfs): every byte read checked, every byte written the LBA pattern, per-point figures."""

from __future__ import annotations

import os

import pytest
from busprobe.backends.block.engine import run_block_io, slot_regions
from busprobe.backends.block.guard import check_node
from busprobe.backends.block.transport import BlockTransport
from busprobe.protocol.storage import check_lba_bytes
from busprobe.results import finish_document, new_document
from busprobe.sweep import Sweep, SweepPlan

from .conftest import loop_device, null_disk_image, sysfs_disk

BLOCKS = 8192  # 4 MiB


@pytest.fixture
def null_disk(tmp_path):
    """``(node, sysfs_root, image)`` of a loop device that reads as a null disk."""
    image = tmp_path / "disk.img"
    null_disk_image(image, BLOCKS)
    with loop_device(image) as node:
        major, minor = check_node(node)
        stat = f"/sys/dev/block/{major}:{minor}/stat"
        sysfs_disk(tmp_path / "sys", major, minor, sectors=BLOCKS, stat=stat)
        yield node, tmp_path / "sys", image


def test_slots_get_regions_of_their_own():
    regions = slot_regions(8192, 65536, 4)
    assert regions == [(0, 16), (2048, 16), (4096, 16), (6144, 16)]
    with pytest.raises(ValueError, match="no room"):
        slot_regions(100, 65536, 4)


def test_a_read_and_write_ladder_is_clean_and_leaves_the_pattern(null_disk):
    node, sysfs, image = null_disk
    plan = SweepPlan(("read", "write"), (4096, 65536), (1, 4))
    with BlockTransport(node, sysfs) as transport:
        transport.min_bytes = 256 << 10
        plan.validate(transport)
        points = Sweep(transport, plan).run()
        bus = transport.bus
    assert bus.kind == "usb-storage" and bus.protocol == "bot"
    assert bus.extra["max_sectors_kb"] == 120 and bus.extra["driver"] == "usb-storage"
    assert len(points) == 8
    for point in points:
        assert point.errors == 0, point.to_json()["error_detail"]
        assert all(s > 0 for s in point.samples)
        last = point.telemetry[-1]
        assert last["ios"] == point.transfers and last["latency_p50_us"] > 0
        assert last["iops"] == pytest.approx(point.transfers / point.seconds[-1], rel=1e-3)
        side = point.spec.direction
        # The kernel's count of the commands it issued (the loop device's stat).
        assert last[f"{side}_commands"] >= point.transfers
    with image.open("rb") as f:
        assert check_lba_bytes(0, f.read()) == (0, None)


def test_a_block_that_is_not_the_pattern_is_counted_where_it_is(null_disk):
    node, _, image = null_disk
    with image.open("r+b") as f:  # LBA 9, words 3..4
        f.seek(9 * 512 + 12)
        f.write(b"\xde\xad\xbe\xef" * 2)
    os.sync()
    fd = os.open(node, os.O_RDONLY | os.O_DIRECT)
    try:
        run = run_block_io(fd, "read", 4096, 4, 1, BLOCKS)
    finally:
        os.close(fd)
    assert run.mismatched_words == 2 and run.first_error_offset == 9 * 512 + 12
    assert run.ios == 4 and run.bytes == 4 * 4096 and not run.errors


def test_a_sweeps_result_document_has_the_driver_and_checks(null_disk):
    node, sysfs, _ = null_disk
    plan = SweepPlan(("read",), (8192,), (2,))
    with BlockTransport(node, sysfs) as transport:
        transport.min_bytes = 64 << 10
        doc = new_document(f"block:{node}")
        doc["bus"] = transport.bus.to_json()
        doc["topology"] = transport.topology()
        doc["points"] = [p.to_json() for p in Sweep(transport, plan).run()]
    doc = finish_document(doc)
    assert doc["errors"] == 0
    assert doc["topology"][-1]["kind"] == "block-device"
    assert doc["topology"][-1]["driver"] == "usb-storage"
    point = doc["points"][0]
    assert point["ceiling"] and 0 < point["ceiling"] < 60e6  # the EHCI BOT model's


def test_a_length_that_is_not_whole_blocks_is_refused(null_disk):
    node, sysfs, _ = null_disk
    from busprobe.transport import InvalidRequest

    with BlockTransport(node, sysfs) as transport, pytest.raises(InvalidRequest,
                                                                  match="whole 512-byte"):
        transport.validate("read", 1000, 1)


def test_model_and_topology_describe_a_disk_from_sysfs(null_disk):
    from busprobe.model import ceiling_for
    from busprobe.targets import describe

    node, sysfs, _ = null_disk
    target = describe(f"block:{node}", sysfs_root=sysfs)
    assert (target.bus.kind, target.bus.protocol, target.bus.host_profile) == \
        ("usb-storage", "bot", "ehci")
    assert [hop.kind for hop in target.hops][-2:] == ["usb-device", "block-device"]
    assert ceiling_for(target.bus, "read", length=1 << 20).parts["commands"] == 9
