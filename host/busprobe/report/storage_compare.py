"""BOT against UAS: two sweeps of a null disk, one per storage transport.

``busprobe compare`` pairs every ``usb-storage`` run the ``usb-storage`` driver made (BOT) with
every one ``uas`` made on the same host controller (host profile and controller driver) — and
likewise every ``--protocol bot`` sweep of the disk over busprobe's own framing (bus ``usb2-hs``
or, UAS with bulk streams, ``usb3-ss``; one command per transfer) with a ``--protocol uas`` one
of the same device and host — and
shows per direction, length and queue depth swept by both: each figure, how far BOT is behind
(``1 - BOT / UAS``), the time BOT adds per I/O (``length / BOT - length / UAS``) beside the
model's (:mod:`busprobe.model.usb_storage`), and a line saying why: BOT's per-command turnaround
(CBW, data, CSW one after the other, one command at a time) against UAS's two turnarounds,
overlapped across the commands in flight.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..lengths import format_size
from ..model.bus import bus_from_json
from ..protocol.names import Direction, Framing
from ..result_schema import protocol_of
from ..units import Units

__all__ = ["storage_pairs", "storage_rows", "storage_sections", "behind_line"]


def _host_key(doc: dict[str, Any]) -> tuple[Any, ...]:
    bus = doc.get("bus") or {}
    extra = bus.get("extra") or {}
    return bus.get("kind"), bus.get("speed"), bus.get("host_profile"), \
        extra.get("controller_driver"), extra.get("emulated_controller")


def storage_pairs(runs: Sequence[Any]) -> list[tuple[Any, Any]]:
    """``(bot_run, uas_run)`` for each BOT block run and UAS block run on the same host."""
    def storage(run: Any, protocol: str) -> bool:
        # usb2-hs: busprobe's own framing; only the null disk speaks UAS there, and a BOT run
        # pairs with one by the same device and host.
        return (run.doc.get("bus") or {}).get("kind") in ("usb-storage", *_OWN_FRAMING) \
            and protocol_of(run.doc) == protocol
    return [(b, u) for b in runs if storage(b, "bot") for u in runs
            if storage(u, "uas") and _host_key(u.doc) == _host_key(b.doc)
            and (not _own_framing(b.doc) or b.doc.get("device") == u.doc.get("device"))]


#: Bus kinds of the null disk swept over busprobe's own framing (one command per transfer).
_OWN_FRAMING = ("usb2-hs", "usb3-ss")


def _own_framing(doc: dict[str, Any]) -> bool:
    """Whether the run framed the commands itself (``usb2-hs``, ``usb3-ss``: one command per
    transfer) rather than through a kernel driver (``usb-storage``)."""
    return (doc.get("bus") or {}).get("kind") in _OWN_FRAMING


def _points(doc: dict[str, Any]) -> dict[tuple[str, int, int], float]:
    return {(p["direction"], p["length"], p["queue_depth"]): p["throughput"]
            for p in doc.get("points") or [] if not p["errors"] and p["throughput"] > 0}


def _paired(bot_doc: dict[str, Any], uas_doc: dict[str, Any]
            ) -> tuple[dict[tuple[str, int, int], float], dict[tuple[str, int, int], float]]:
    """Both runs' points. busprobe's own BOT framing runs at queue depth 1 only (BOT has no
    queue: one command at a time whatever is asked), so its figure stands for every depth the
    UAS run swept; a kernel driver's BOT run was swept at each depth itself."""
    bot_points, uas_points = _points(bot_doc), _points(uas_doc)
    if _own_framing(bot_doc):
        for direction, length, depth in uas_points:
            one = bot_points.get((direction, length, 1))
            if one is not None:
                bot_points.setdefault((direction, length, depth), one)
    return bot_points, uas_points


def _model(doc: dict[str, Any], direction: str, length: int, depth: int
           ) -> tuple[float, float] | None:
    """``(BOT, UAS)`` model throughputs at this point of this run's bus, or None (no model, or
    one whose host stands in for a controller it has no profile of: BOT against UAS behind the
    ideal host says nothing of that controller)."""
    from ..model import ceiling_for

    try:
        bus = bus_from_json(doc.get("bus") or {})
        ceilings = [ceiling_for(replace(bus, protocol=p), direction, length=length,
                                queue_depth=depth) for p in (Framing.BOT, Framing.UAS)]
    except (TypeError, ValueError, KeyError, NotImplementedError):
        return None
    if any(c.parts.get("host_stand_in") for c in ceilings):
        return None
    return float(ceilings[0].throughput), float(ceilings[1].throughput)


def storage_rows(bot_doc: dict[str, Any], uas_doc: dict[str, Any],
                 units: Units) -> list[tuple[str, ...]]:
    """Header plus one row per point both runs measured without errors."""
    bot_points, uas_points = _paired(bot_doc, uas_doc)
    rows: list[tuple[str, ...]] = [(
        "direction", "length", "QD", f"BOT {units.label}", f"UAS {units.label}", "BOT behind",
        "BOT adds per I/O", "model BOT behind", "model adds")]
    for key in sorted(set(bot_points) & set(uas_points)):
        direction, length, depth = key
        bot, uas = bot_points[key], uas_points[key]
        model = _model(bot_doc, direction, length, depth)
        rows.append((
            direction, format_size(length), str(depth), f"{units.convert(bot):.2f}",
            f"{units.convert(uas):.2f}", f"{(1 - bot / uas) * 100:.1f} %",
            f"{(length / bot - length / uas) * 1e6:.1f} µs",
            "-" if model is None else f"{(1 - model[0] / model[1]) * 100:.1f} %",
            "-" if model is None else f"{(length / model[0] - length / model[1]) * 1e6:.1f} µs"))
    return rows


def behind_line(bot_doc: dict[str, Any], uas_doc: dict[str, Any]) -> str | None:
    """The verdict line: how far BOT is behind at the longest length and deepest queue both
    swept, and why."""
    bot_points, uas_points = _paired(bot_doc, uas_doc)
    common = set(bot_points) & set(uas_points)
    if not common:
        return None
    # The longest length at the deepest queue, reads first (where a driver's per-command
    # turnaround shows most: a write's data wait for the host either way).
    incoming = (Direction.IN, Direction.READ)
    direction, length, depth = max(common, key=lambda k: (k[1], k[2], k[0] in incoming))
    bot, uas = bot_points[(direction, length, depth)], uas_points[(direction, length, depth)]
    extra = (bot_doc.get("bus") or {}).get("extra") or {}
    if bot >= uas:
        # Then the turnarounds are not what paces either run: say so rather than explain a gap
        # the wrong way round (through an emulator its own pace decides both).
        pace = (f"{extra['emulated_controller']}'s pace" if extra.get("emulated_controller")
                else "something other than the host's turnarounds")
        return (f"BOT is not behind UAS here ({(bot / uas - 1) * 100:.1f} % ahead, {direction} "
                f"{format_size(length)} at queue depth {depth}): {pace} decides both runs, "
                "not BOT's turnaround per command.")
    max_kb = extra.get("max_sectors_kb") or 120
    commands = -(-length // (int(max_kb) * 1024))
    profile = (bot_doc.get("bus") or {}).get("host_profile") or "?"
    split = (f"each I/O is {commands} command(s) of at most {max_kb} KiB (max_sectors_kb)"
             if not _own_framing(bot_doc) else "each transfer is one READ(10)/WRITE(10) command"
             " (busprobe's own framing)")
    streams = (bot_doc.get("bus") or {}).get("kind") == "usb3-ss"
    uas_pays = ("UAS with bulk streams submits each command's status and data on its tag's "
                "streams with the command, so with commands queued the device moves one tag's "
                "data while the host completes another's (at queue depth 1 it pays the "
                "turnaround once, after each SENSE)" if streams else
                "UAS pays it after each READY and, at queue depth 1, after each SENSE (with "
                "commands queued the next READY follows the SENSE at once)")
    return (f"BOT is {(1 - bot / uas) * 100:.1f} % behind UAS ({direction} {format_size(length)}"
            f" at queue depth {depth}, host {profile}): {split}, and BOT runs them one at a "
            f"time, each paying "
            f"the host's turnaround three times (CBW, data, CSW submitted one after the other), "
            f"where {uas_pays}; it adds {(length / bot - length / uas) * 1e6:.0f} µs per I/O.")


def storage_sections(runs: Sequence[Any], units: Units = Units.MB
                     ) -> list[tuple[str, list[tuple[str, ...]], list[str]]]:
    """``(title, table rows, explanation lines)`` per BOT / UAS pair, for ``compare``."""
    out = []
    for bot_run, uas_run in storage_pairs(runs):
        names = ("--protocol bot", "--protocol uas") if _own_framing(bot_run.doc) \
            else ("usb-storage", "uas")
        title = f"BOT vs UAS, {bot_run.label} ({names[0]}) vs {uas_run.label} ({names[1]})"
        rows = storage_rows(bot_run.doc, uas_run.doc, units)
        line = behind_line(bot_run.doc, uas_run.doc)
        if len(rows) == 1 or line is None:
            out.append((title + ": no point measured without errors in both", [], []))
            continue
        emulated = ((bot_run.doc.get("bus") or {}).get("extra") or {}).get("emulated_controller")
        notes = [line]
        if emulated:
            notes.append(f"Both through {emulated}: the figures are the emulator's, not a host "
                         "controller's.")
        out.append((title + ": behind = 1 - BOT / UAS", rows, notes))
    return out
