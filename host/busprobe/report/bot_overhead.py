"""What USB mass storage framing costs: a ``--protocol bot`` run against a streamed run.

``busprobe compare`` pairs each BOT run with the streamed runs of the same device and host (bus
kind, host profile, device selector) and shows, per direction and length, both throughputs and
the overhead: ``1 - BOT / stream`` at queue depth 1 (the same one transfer at a time, so what is
left is the framing), and against the streamed run's deepest queue (what a queued protocol such
as UAS could win back). The time BOT adds per command, ``length / BOT - length / stream``, is
set beside what the model says it is made of (the CBW and CSW stages, each with the host's
completion latency, and two more resubmits: :mod:`busprobe.model.usb2_bot`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..lengths import format_size
from ..model.bus import bus_from_json
from ..protocol.names import Framing
from ..result_schema import protocol_of
from ..units import Units

__all__ = ["bot_pairs", "overhead_rows", "bot_overhead_sections"]


def _host_key(doc: dict[str, Any]) -> tuple[Any, ...]:
    bus = doc.get("bus") or {}
    return bus.get("kind"), bus.get("host_profile"), bus.get("max_packet_size"), doc.get("device")


def bot_pairs(runs: Sequence[Any]) -> list[tuple[Any, Any]]:
    """``(bot_run, stream_run)`` for every BOT run and each streamed run on the same host."""
    return [(b, s) for b in runs if protocol_of(b.doc) == Framing.BOT
            for s in runs
            if protocol_of(s.doc) == Framing.STREAM and _host_key(s.doc) == _host_key(b.doc)]


def _clean_points(doc: dict[str, Any]) -> dict[tuple[str, int, int], float]:
    return {(p["direction"], p["length"], p["queue_depth"]): p["throughput"]
            for p in doc.get("points") or [] if not p["errors"] and p["throughput"] > 0}


def _model(doc: dict[str, Any], direction: str, length: int) -> tuple[float, float] | None:
    """``(stream QD 1, BOT)`` model throughputs for this run's bus, or ``None`` without one."""
    from ..model import ceiling_for

    try:
        described = bus_from_json(doc.get("bus") or {})
        stream = ceiling_for(replace(described, protocol="stream"), direction, length=length,
                             queue_depth=1)
        framed = ceiling_for(replace(described, protocol="bot"), direction, length=length,
                             queue_depth=1)
    except (TypeError, ValueError, KeyError, NotImplementedError):
        return None
    if framed.parts.get("protocol") != Framing.BOT:  # a bus whose model has no BOT term
        return None
    return float(stream.throughput), float(framed.throughput)


def overhead_rows(bot_doc: dict[str, Any], stream_doc: dict[str, Any],
                  units: Units) -> list[tuple[str, ...]]:
    """Header plus one row per direction and length measured in both runs."""
    framed, streamed = _clean_points(bot_doc), _clean_points(stream_doc)
    deep = max((q for (_, _, q) in streamed), default=1)
    header = ("direction", "length", f"stream QD1 {units.label}", f"BOT {units.label}",
              "BOT overhead", "added per command", "model overhead", "model added")
    if deep > 1:
        header += (f"stream QD{deep} {units.label}", f"BOT vs QD{deep}")
    rows: list[tuple[str, ...]] = [header]
    for (direction, length, _) in sorted(k for k in framed if k[2] == 1):
        bot = framed[(direction, length, 1)]
        stream = streamed.get((direction, length, 1))
        if stream is None:
            continue
        added = (length / bot - length / stream) * 1e6
        model = _model(bot_doc, direction, length)
        row = (direction, format_size(length), f"{units.convert(stream):.2f}",
               f"{units.convert(bot):.2f}", f"{(1 - bot / stream) * 100:.1f} %",
               f"{added:.1f} µs",
               "-" if model is None else f"{(1 - model[1] / model[0]) * 100:.1f} %",
               "-" if model is None else f"{(length / model[1] - length / model[0]) * 1e6:.1f} µs")
        if deep > 1:
            queued = streamed.get((direction, length, deep))
            row += ("-", "-") if queued is None else (
                f"{units.convert(queued):.2f}", f"{(1 - bot / queued) * 100:.1f} %")
        rows.append(row)
    return rows


def _explanation(bot_doc: dict[str, Any]) -> list[str]:
    from ..model.usb2_bot import bot_command
    from ..model.usb2_hosts import load_profile

    bus = bot_doc.get("bus") or {}
    lines = ["BOT moves every command as three bulk transfers, one after the other: a 31-byte "
             "CBW (OUT), the data, a 13-byte CSW (IN). Each is submitted only when the one "
             "before has completed, so a command pays the host's completion and resubmit "
             "latency three times where a streamed transfer at queue depth 1 pays them once; "
             "the cost is per command, so it weighs most at small lengths."]
    if bus.get("kind") != "usb2-hs" or not bus.get("host_profile"):
        return lines
    try:
        profile = load_profile(bus["host_profile"])
        times = bot_command(profile, "in", bus.get("max_packet_size") or 512,
                            max_packet_size=bus.get("max_packet_size") or 512)
    except ValueError:
        return lines
    rounding = (", reported on the next µframe boundary" if profile.completion_on_uframe
                else "")
    lines.append(
        f"Host profile {profile.name}: completion {profile.completion_latency_us:g} µs"
        f"{rounding}, resubmit {profile.resubmit_latency_us:g} µs; the model's CBW stage takes "
        f"{times['CBW'] * 1e6:.1f} µs and the CSW stage {times['CSW'] * 1e6:.1f} µs from "
        f"submission to completion, plus two more resubmits of "
        f"{times['resubmit'] * 1e6:.1f} µs: about "
        f"{(times['CBW'] + times['CSW'] + 2 * times['resubmit']) * 1e6:.0f} µs added to every "
        f"command ('model added').")
    return lines


def bot_overhead_sections(runs: Sequence[Any], units: Units = Units.MB
                          ) -> list[tuple[str, list[tuple[str, ...]], list[str]]]:
    """``(title, table rows, explanation lines)`` per BOT / stream pair, for ``compare``."""
    out = []
    for bot_run, stream_run in bot_pairs(runs):
        rows = overhead_rows(bot_run.doc, stream_run.doc, units)
        title = f"BOT overhead, {bot_run.label} (bot) vs {stream_run.label} (stream)"
        if len(rows) == 1:
            out.append((title + ": no length and direction measured at queue depth 1 in both",
                        [], []))
            continue
        profile = (bot_run.doc.get("bus") or {}).get("host_profile")
        title += (f", host {profile}" if profile else "") + ": overhead = 1 - BOT / stream"
        out.append((title, rows, _explanation(bot_run.doc)))
    return out
