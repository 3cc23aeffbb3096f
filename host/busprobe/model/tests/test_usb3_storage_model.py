"""The usb-storage model on a SuperSpeed port (``model/usb3_storage.py``): each of an I/O's
commands costed by the ``usb3-ss`` BOT and UAS-with-streams models, Linux's SuperSpeed
``max_sectors_kb`` by default, and a controller without a SuperSpeed profile said to be the
ideal host's stand-in."""

from __future__ import annotations

from dataclasses import replace

import pytest
from busprobe.model import ceiling_for
from busprobe.model.usb3 import usb3_ceiling
from busprobe.model.usb3_hosts import load_usb3_profile
from busprobe.model.usb3_uas_ceiling import uas_ceiling
from busprobe.transport import BusDescription

MIB = 1 << 20
LINK = BusDescription("usb3-ss", "super", max_packet_size=1024)


def _disk(protocol: str, host: str = "vl805", **extra) -> BusDescription:
    return BusDescription("usb-storage", "super", host_profile=host, max_packet_size=1024,
                          protocol=protocol, extra=extra)


def test_a_bot_io_is_its_commands_each_a_superspeed_bot_command_at_1_mib_by_default():
    ceiling = ceiling_for(_disk("bot"), "read", length=3 * MIB // 2, queue_depth=8)
    assert ceiling.parts["commands"] == 2 and ceiling.parts["max_command"] == MIB
    profile = load_usb3_profile("vl805")
    each = [usb3_ceiling(replace(LINK, protocol="bot"), "in", length=n, queue_depth=1,
                         profile=profile) for n in (MIB, MIB // 2)]
    expected = sum(c.parts["period"] for c in each)
    assert ceiling.parts["io_seconds"] == pytest.approx(expected)
    assert ceiling_for(_disk("bot"), "read", length=3 * MIB // 2, queue_depth=1).throughput \
        == pytest.approx(ceiling.throughput)  # one command at a time whatever the depth


def test_a_uas_io_keeps_its_commands_in_flight_on_streams_at_512_kib_by_default():
    """Each command the faster of the UAS ceilings behind a host that primes each stream and
    one that primes the pipe (a real xHC's way is not known: DESIGN §6.10)."""
    ceiling = ceiling_for(_disk("uas"), "write", length=2 * MIB, queue_depth=2)
    assert ceiling.parts["commands"] == 4 and ceiling.parts["in_flight"] == 8
    named, piped = (uas_ceiling(replace(LINK, extra={"primes": primes}), "out",
                                length=MIB // 2, queue_depth=8,
                                profile=load_usb3_profile("vl805"))
                    for primes in ("named", "pipe"))
    assert piped.throughput > named.throughput
    assert ceiling.throughput == pytest.approx(piped.throughput)
    assert "whichever is faster" in ceiling.formula


def test_a_real_disks_queued_4_kib_writes_may_go_as_fast_as_a_pipe_primed_host_moves_them():
    """Behind vl805 a host that primes the pipe moves queued 4 KiB writes at 117.1 MB/s where
    one that primes each stream moves 110.5 (the simulation: 116.03 and 109.79): a disk's
    ceiling that took the latter would be below what such a host measures."""
    write = ceiling_for(_disk("uas"), "write", length=4096, queue_depth=8)
    assert write.throughput == pytest.approx(117.1e6, rel=0.002)


@pytest.mark.parametrize("direction", ["read", "write"])
def test_behind_vl805_uas_is_ahead_of_bot_and_more_so_with_a_queue(direction):
    """The founding finding's shape: the same disk on the same port, faster under UAS, the
    gap growing with queue depth (4 KiB commands); neither above the link's streamed
    plateau."""
    bot = [ceiling_for(_disk("bot"), direction, length=4096, queue_depth=q).throughput
           for q in (1, 8)]
    uas = [ceiling_for(_disk("uas"), direction, length=4096, queue_depth=q).throughput
           for q in (1, 8)]
    assert uas[0] > bot[0] and uas[1] > bot[1]
    assert 1 - bot[1] / uas[1] > 1 - bot[0] / uas[0] > 0
    way = "in" if direction == "read" else "out"
    plateau = usb3_ceiling(LINK, way, profile=load_usb3_profile("ideal")).throughput
    assert max(bot + uas) <= plateau


def test_a_controller_without_a_superspeed_profile_gets_the_ideal_hosts_figure_and_says_so():
    """A block device names its controller's driver (``xhci``): no SuperSpeed profile has
    that name, so the ceiling is the link's and the protocol's."""
    emulated = ceiling_for(_disk("uas", host="xhci"), "read", length=64 << 10, queue_depth=4)
    ideal = ceiling_for(_disk("uas", host="ideal"), "read", length=64 << 10, queue_depth=4)
    assert emulated.throughput == ideal.throughput
    assert "host xhci: no SuperSpeed profile, the ideal host stands for it" in emulated.formula
    assert "no SuperSpeed profile" not in ideal.formula
    assert emulated.parts["host_stand_in"] == "xhci" and "host_stand_in" not in ideal.parts
