"""``busprobe sweep --protocol uas`` on the SuperSpeed null disk (``sim:usb3?design=storage``)
through the real CLI, against the UAS-with-streams model (``model/usb3_uas.py``): each point
never above its ceiling (an ideal device's), within 1 % of the same bound with busprobe's UAS
engine (what keeps a queue-depth-1 point of short commands a few per cent under the ideal),
every byte right. One simulator per sweep, the model built once per session."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from busprobe.cli import main
from busprobe.model import ceiling_for
from busprobe.model.bus import bus_from_json
from busprobe.sim.usb3.link_trace import TRACE_VARIABLE

pytestmark = pytest.mark.sim


def _sweep(tmp_path: Path, host: str, *args: str, primes: str = "named") -> dict:
    out = tmp_path / "uas.json"
    # Small repeats (64 KiB or two commands, and half a millisecond of bus time at the least):
    # the stepped ceiling is of the very run each repeat makes, so a short one is as exact.
    device = f"sim:usb3?host={host}&design=storage&primes={primes}"
    assert main(["sweep", "--device", device, "--protocol",
                 "uas", *args, "--min-bytes", "64K", "--min-transfers", "2", "--no-progress",
                 "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["bus"]["protocol"] == "uas" and doc["bus"]["kind"] == "usb3-ss"
    return doc


def _check(doc: dict, *, within: float | None = 0.01) -> None:
    """Every point clean, at most its ceiling and the bound with busprobe's engine, and (with
    ``within``) that close to the latter."""
    bus = bus_from_json(doc["bus"])
    for point in doc["points"]:
        assert point["errors"] == 0, point["error_detail"]
        detail = point["error_detail"]
        assert detail["device_byte_mismatch"] == detail["device_errors"] == 0
        ceiling = ceiling_for(bus, point["direction"], length=point["length"],
                              queue_depth=point["queue_depth"], transfers=point["transfers"])
        assert point["ceiling"] == pytest.approx(ceiling.throughput)
        engine = ceiling.parts["busprobe_device"]
        got = point["throughput"]
        print(f"{bus.host_profile} {point['direction']} {point['length']} B QD "
              f"{point['queue_depth']} × {point['transfers']}: {got / 1e6:.2f} MB/s = "
              f"{got / ceiling.throughput * 100:.2f} % of the ceiling "
              f"{ceiling.throughput / 1e6:.2f}, {got / engine * 100:.2f} % of "
              f"{engine / 1e6:.2f} with busprobe's engine")
        assert got <= engine <= ceiling.throughput * (1 + 1e-9), point
        if within is not None:
            assert got > (1 - within) * engine, point


def _device_packets(trace: Path) -> Iterator[tuple[int, str, list[str]]]:
    """The device's header packets in a link trace (``sim/usb3/link_trace.py``): each one's first
    cycle, its type and endpoint (``"DP ep1IN"``), and the line's fields."""
    for line in trace.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[1] == "D->H":
            yield int(fields[0]), " ".join(fields[3:5]), fields


def test_sweep_protocol_uas_reads_within_1_percent_of_the_model(usb3_storage_model,
                                                                 tmp_path: Path):
    _check(_sweep(tmp_path, "vl805", "--direction", "in", "--lengths", "4K,256K",
                  "--queue-depth", "1,4"))


def test_sweep_protocol_uas_writes_within_1_percent_of_the_model(usb3_storage_model,
                                                                  tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch):
    """Each write's stream primed with its first data packet, which the disk drops. The link
    trace (``BUSPROBE_LINK_TRACE``) shows every packet of the stream pipes carrying a stream,
    each as the status and data pipes' both ways, and none on the command pipe."""
    trace = tmp_path / "link.trace"
    monkeypatch.setenv(TRACE_VARIABLE, str(trace))
    _check(_sweep(tmp_path, "vl805", "--direction", "out", "--lengths", "4K",
                  "--queue-depth", "1,4"))
    lines = trace.read_text().splitlines()
    # The device's link commands are traced: an LGOOD for every header the host sent (and
    # one advertisement per link).
    sent = sum(" H->D " in line for line in lines)
    assert sent <= sum(" LGOOD " in line for line in lines) <= sent + 4
    streams: dict[str, set[int]] = {}
    for line in lines:
        packet = re.search(r"(DP|ACK|ERDY) (ep[1-4](?:IN|OUT)) .*stream(\d+)", line)
        if packet:
            streams.setdefault(f"{packet[1]} {packet[2]}", set()).add(int(packet[3]))
    assert streams["DP ep4OUT"] == {0}  # the COMMAND IUs
    tags = set(range(1, 5))  # QD 4: tags 1-4, a stream each
    for pipe in ("DP ep2OUT", "ACK ep2OUT", "ERDY ep2OUT", "ACK ep3IN", "ERDY ep3IN",
                 "DP ep3IN"):
        assert streams[pipe] == tags, pipe


def test_sweep_protocol_uas_behind_small_burst_at_qd_1_within_1_percent_of_the_model(
        usb3_storage_model, tmp_path: Path):
    """No re-token delay to hide the chain: a write's COMMAND IU behind its data stream's
    prime on the host's lane, each ERDY answered after the host's link commands."""
    _check(_sweep(tmp_path, "small-burst", "--direction", "both", "--lengths", "4K",
                  "--queue-depth", "1"))


def test_sweep_protocol_uas_behind_ideal_at_qd_1_within_1_percent_of_the_model(
        usb3_storage_model, tmp_path: Path):
    """A host that answers at once leaves busprobe's own engine in the chain (its decode, a
    read's first packet filled before it goes, the idle cycles and link commands its link
    shows): 1 KiB commands one at a time, where each cycle of them is 0.15 %."""
    _check(_sweep(tmp_path, "ideal", "--direction", "both", "--lengths", "1K",
                  "--queue-depth", "1"))


def test_a_host_that_primes_the_pipe_moves_queued_writes_without_a_prime_each(
        usb3_storage_model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``primes=pipe``: the simulated xHCI primes each stream pipe once with the Prime Stream ID
    and the disk selects every stream after that, so no write's first data packet goes twice.
    Behind small-burst the queued writes are within 1 % of the pipe-primed bound with
    busprobe's engine, and above the bound any device reaches with named primes; the link
    trace shows one prime a pipe and no NRDY after them."""
    trace = tmp_path / "link.trace"
    monkeypatch.setenv(TRACE_VARIABLE, str(trace))
    doc = _sweep(tmp_path, "small-burst", "--direction", "out", "--lengths", "1K,4K",
                 "--queue-depth", "1,4", primes="pipe")
    assert doc["bus"]["extra"]["primes"] == "pipe"
    _check(doc)
    named = bus_from_json({**doc["bus"], "extra": {**doc["bus"]["extra"], "primes": "named"}})
    for point in doc["points"]:
        if point["queue_depth"] == 4:
            assert point["throughput"] > ceiling_for(
                named, "out", length=point["length"], queue_depth=4,
                transfers=point["transfers"]).throughput, point
    lines = trace.read_text().splitlines()
    primes = [line for line in lines if " H->D " in line and "stream65534" in line]
    assert [line.split()[2:4] for line in primes] == [["ACK", "ep3IN"], ["DP", "ep2OUT"]]
    assert sum(" NRDY " in line for line in lines) == 2  # the two primes'


def test_queued_reads_behind_ideal_send_each_sense_after_the_next_streams_erdy(
        usb3_storage_model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A host that resubmits at a completion sends the next COMMAND IU as the SENSE IU comes: a
    SENSE right behind its data put that IU (and its primes) on the host's lane ahead of the
    Start Stream answering the next data stream's ERDY, and the next data packet waited for
    them (1 KiB × QD 4: 362.43 MB/s, 93.7 % of the bound). The disk holds the SENSE until that
    ERDY has gone, and the ERDY goes ahead of the link commands queued (gateware/usb3/
    chained_packets.py); the link trace shows the first, and the point is within 1.5 % (383.12
    in these short repeats, 99.0 %; 379.11, 98.0 %, with the ERDY behind the link commands:
    docs/DESIGN.md §3.6)."""
    trace = tmp_path / "link.trace"
    monkeypatch.setenv(TRACE_VARIABLE, str(trace))
    _check(_sweep(tmp_path, "ideal", "--direction", "in", "--lengths", "1K",
                  "--queue-depth", "4"), within=0.015)
    # Each SENSE IU of a command whose next data stream was selected after its last data
    # packet: that stream's ERDY went first.
    erdy_first = sense_first = 0
    last_data_end, erdy_since = None, False
    for cycle, packet, _ in _device_packets(trace):
        if packet == "DP ep1IN":
            last_data_end, erdy_since = cycle, False
        elif packet == "ERDY ep1IN" and last_data_end is not None:
            erdy_since = True
        elif packet == "DP ep3IN" and last_data_end is not None:
            erdy_first += erdy_since
            sense_first += not erdy_since
            last_data_end = None
    assert erdy_first > 100 and sense_first <= 12, (erdy_first, sense_first)


def test_queued_writes_behind_small_burst_select_the_status_stream_during_the_last_packet(
        usb3_storage_model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A write's status stream is selected as its last data packet starts to arrive, so the
    host's Start Stream goes right behind that packet: selected at the packet's ACK, the host
    (1 µs turnaround) queued it behind the next command's prime, a whole data packet, and 1 KiB
    × QD 4 writes read 70.65 MB/s in these short repeats (95.2 % of the bound with the engine;
    73.50 with it, 99.0 %; 99.84 % at the sweep's default sizes, docs/DESIGN.md §6.10). The
    link trace shows the SENSE's ERDY ahead of its write's last data ACK (but for a few where
    the host's ACK of the last SENSE, which the ERDY waits for, went on the host's lane behind
    that packet), and the point within 1.5 % of the bound with the engine."""
    trace = tmp_path / "link.trace"
    monkeypatch.setenv(TRACE_VARIABLE, str(trace))
    _check(_sweep(tmp_path, "small-burst", "--direction", "out", "--lengths", "1K",
                  "--queue-depth", "4"), within=0.015)
    early = late = 0
    erdy_at: dict[str, int] = {}
    last_ack_at: dict[str, int] = {}
    for cycle, packet, fields in _device_packets(trace):
        streams = [f for f in fields if f.startswith("stream")]
        if len(fields) < 8 or streams in ([], ["stream0"]):
            continue
        stream = streams[0]
        if packet == "ERDY ep3IN":
            erdy_at[stream] = cycle
        elif packet == "ACK ep2OUT":
            last_ack_at[stream] = cycle
        elif packet == "DP ep3IN" and stream in erdy_at and stream in last_ack_at:
            early += erdy_at[stream] < last_ack_at[stream]
            late += erdy_at[stream] > last_ack_at[stream]
    assert early > 40 and late <= early // 10, (early, late)


def test_queued_reads_behind_ideal_hold_the_bulk_tps_until_the_data_train_has_gone(
        usb3_storage_model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Behind a host that answers an ERDY at once, with another stream primed, the disk's TPs
    (the status ERDY, the next COMMAND IU's ACK, the primes' NRDYs) wait for the data train's
    last packet (gateware/usb3/held_handshakes.py). They then fill the lane's wait for the next
    stream, and that stream's ERDY goes ahead of the SENSE IU, so the host answers it before it
    resubmits. Before, they went between two data packets of the train, or the SENSE went
    first and the next COMMAND IU went on the host's lane ahead of the Start Stream.

    4 KiB × QD 4 reads, against the bound with the engine:
    - repeats of 128 KiB: 440.65 MB/s without the hold (98.07 %), 444.47 with it (98.92 %);
    - this test's shorter repeats, with it: 444.42 (98.90 %);
    - the sweep's default sizes: 98.39 % without, 99.26 % with it (docs/DESIGN.md §6.10).

    The link trace must show no TP inside a train, and the next ERDY ahead of the SENSE IU.
    A few trains at each repeat's start are let off: no answer is measured yet there, and no
    other stream is primed. The point must be within 1.5 %."""
    trace = tmp_path / "link.trace"
    monkeypatch.setenv(TRACE_VARIABLE, str(trace))
    _check(_sweep(tmp_path, "ideal", "--direction", "in", "--lengths", "4K",
                  "--queue-depth", "4"), within=0.015)
    trains = broken = erdy_first = sense_first = 0
    in_train = tp_inside = False
    data_ended = erdy_since = False
    for _, packet, fields in _device_packets(trace):
        if packet == "DP ep1IN":
            if not in_train:
                in_train, tp_inside = True, False
            if fields[-1] == "eob":  # the train's last packet
                trains, broken = trains + 1, broken + tp_inside
                in_train, data_ended, erdy_since = False, True, False
        elif fields[3] in ("ACK", "ERDY", "NRDY"):
            if in_train:
                tp_inside = True
            if packet == "ERDY ep1IN" and data_ended:
                erdy_since = True
        elif packet == "DP ep3IN" and data_ended:
            erdy_first += erdy_since
            sense_first += not erdy_since
            data_ended = False
    assert trains > 20 and broken <= trains // 20, (trains, broken)
    assert sense_first <= trains // 10 < erdy_first, (erdy_first, sense_first)


def test_queued_reads_behind_small_burst_ack_each_command_iu_after_the_data_train(
        usb3_storage_model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A COMMAND IU that comes during a data-in train is ACKed after the train's last packet,
    whatever the host (gateware/usb3/held_handshakes.py's ``train``): between two data packets
    its ACK lengthened the train the reads are bound by. 4 KiB × QD 8 behind ``small-burst``, in
    this test's short repeats: 355.32 MB/s with the ACK inside the train (98.84 % of the bound
    with the engine), 356.45 after it (99.15 %); at the sweep's default sizes 98.69 % and 99.04 %
    (docs/DESIGN.md §6.10). The link trace must show the IU's ACKs after the trains (a few at
    each repeat's start let off), and the point within 1.5 %."""
    trace = tmp_path / "link.trace"
    monkeypatch.setenv(TRACE_VARIABLE, str(trace))
    _check(_sweep(tmp_path, "small-burst", "--direction", "in", "--lengths", "4K",
                  "--queue-depth", "8"), within=0.015)
    inside = after = 0
    in_train = False
    for _, packet, fields in _device_packets(trace):
        if packet == "DP ep1IN":
            in_train = fields[-1] != "eob"
        elif packet == "ACK ep4OUT":
            inside += in_train
            after += not in_train
    assert after > 20 and inside <= after // 20, (after, inside)


@pytest.mark.bench
@pytest.mark.parametrize("ladder", [("4K,256K,2M", "1,8"), ("4K", "32")],
                         ids=["to-2M", "qd32"])
def test_longer_ladders_stay_within_1_percent_behind_vl805(usb3_storage_model, tmp_path: Path,
                                                            ladder: tuple[str, str]):
    """2 MiB commands and 32 outstanding (every tag's stream; ~30 min on a shared machine)."""
    lengths, depths = ladder
    _check(_sweep(tmp_path, "vl805", "--direction", "both", "--lengths", lengths,
                  "--queue-depth", depths))


@pytest.mark.bench
@pytest.mark.parametrize("host", ["small-burst", "ideal"])
def test_other_hosts_stay_under_the_ceiling(usb3_storage_model, tmp_path: Path, host: str):
    """Every point under its ceiling; 256 KiB commands, where the link decides, and every QD 1
    point within 1 % of it. Queued 4 KiB reads with no re-token delay to hide the rest are
    1-2 % under it at the sweep's sizes (the next COMMAND IU ahead of the Start Stream on the
    host's lane; commands waiting for each other on a busy data pipe, which the driver term
    leaves out; docs/DESIGN.md §6.10)."""
    doc = _sweep(tmp_path, host, "--direction", "both", "--lengths", "1K,4K,256K",
                 "--queue-depth", "1,8")
    _check(doc, within=None)
    _check({**doc, "points": [p for p in doc["points"] if p["length"] == 256 << 10
                              or p["queue_depth"] == 1]})


@pytest.mark.bench
@pytest.mark.parametrize("host", ["vl805", "small-burst", "ideal"])
def test_a_host_priming_the_pipe_stays_under_the_ceiling(usb3_storage_model, tmp_path: Path,
                                                         host: str):
    """``primes=pipe`` (docs/DESIGN.md §6.10, "A host that primes the pipe"): every point under
    its pipe-primed ceiling; behind vl805 every point within 1 % of it, behind the others the
    256 KiB ones (their queued short commands 1-8 % under it: the lane's order, which the
    bound leaves out)."""
    doc = _sweep(tmp_path, host, "--direction", "both", "--lengths", "1K,4K,256K",
                 "--queue-depth", "1,8", primes="pipe")
    _check(doc, within=None)
    _check({**doc, "points": [p for p in doc["points"]
                              if host == "vl805" or p["length"] == 256 << 10]})
