"""Sweep results: the JSON document, the CSV table, the printed table, and reading them back.

The JSON document (``schema`` 1) is the record of a run; ``compare`` and ``report`` read it with
:func:`load_results`. Every throughput is in bytes per second (``"units": "bytes/s"``); display
units only affect tables and plots. Keys:

``busprobe_version``, ``schema``
    Writer version and document layout version.
``run_id``
    A UUID naming this run (the results store's key: ``busprobe store push`` of the same run
    twice stores it once).
``device``
    The selector swept (``"sim:usb2?host=ehci"``, ``"usb:1209:0001"``).
``bus``
    :meth:`BusDescription.to_json` of the bus at the start (``kind``, ``speed``, ``width``, ``mps``,
    ``mrrs``, ``host_profile``, ``max_packet_size``, ``extra``).
``topology``
    One object per hop root → device, from :meth:`Transport.topology`.
``host``
    ``hostname``, ``kernel`` (its release), ``platform``, ``python``, ``machine`` of the
    computer that ran the sweep.
``command``
    The command line, as a list of arguments.
``started``, ``finished``
    ISO 8601 UTC timestamps.
``units``, ``display_units``
    ``"bytes/s"``, and the units the table and plot used (``"MB/s"`` or ``"MiB/s"``).
``plan``
    ``directions``, ``lengths``, ``queue_depths``, ``repeat``, ``pattern``, ``settings`` (list of
    ``{"mps": .., "mrrs": ..}``), ``min_transfers``, ``min_bytes``, ``max_transfers``,
    ``min_bus_seconds``, ``max_bus_seconds`` (how points were sized: docs/DESIGN.md §2.4).
``complete``, ``error``
    ``false`` and a one-line reason when the run stopped early (device gone, timeout, Ctrl-C); the
    points measured until then are all present.
``errors``
    Total data errors over all points (0 on a clean run).
``points``
    One object per measured point: ``direction``, ``length``, ``queue_depth`` (asked) and
    ``queue_depth_in_force`` (at most the transfers per repeat), ``mps``, ``mrrs``,
    ``throughput`` (median of repeats, host-timed), ``throughput_min``, ``throughput_max``,
    ``spread`` ((max − min) / median), ``repeats``, ``samples`` (each repeat), ``device_throughput``
    (median, device-timed; ``null`` without device timers) with ``_min``/``_max`` and
    ``device_samples``, ``seconds`` (host time per repeat), ``transfers`` and ``bytes`` per repeat
    and ``sized_by`` (what set the count: ``bytes``, ``transfers``, ``bus time`` or
    ``queue depth``),
    ``errors`` and ``error_detail`` (``mismatched_words``, ``lost_bytes``,
    ``device_byte_mismatch``, ``device_errors``, ``first_error_offset``), ``short_transfers``,
    ``ceiling`` (model, bytes/s, or ``null``), ``ceiling_formula``, ``link_ceiling`` (what the
    link allows whatever the host), ``link_efficiency`` (device-timed where the device times,
    else host-timed, over ``link_ceiling``: never above 1 for a device that times whole bus
    intervals), ``efficiency``
    (throughput / ceiling), ``telemetry`` (raw device counters of the last repeat) and
    ``telemetry_repeats`` (all repeats).
``ceiling`` or ``ceilings``
    The verdict (:func:`busprobe.verdict.assess`): one object, or a list when more than one
    direction/MPS applies; :func:`ceilings_of` returns the list either way.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import platform
import socket
import sys
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import __version__
from .above_link import mark, point_note
from .emulation import emulated_host
from .lengths import format_size
from .os_errors import describe
from .result_file import write_result
from .result_schema import SCHEMA, check_document
from .stats import error_bar, point_spread
from .units import Units

__all__ = [
    "SCHEMA", "new_document", "finish_document", "write_json", "write_csv", "load_results",
    "parse_results", "document_bytes",
    "ceilings_of", "format_table", "CSV_COLUMNS", "host_info", "utc_now",
]

log = logging.getLogger(__name__)


#: CSV columns: (header, point key). Throughputs in bytes per second, as in the JSON.
CSV_COLUMNS: tuple[tuple[str, str], ...] = (
    ("direction", "direction"), ("length", "length"), ("queue_depth", "queue_depth"),
    ("mps", "mps"), ("mrrs", "mrrs"),
    ("throughput_Bps", "throughput"), ("throughput_min_Bps", "throughput_min"),
    ("throughput_max_Bps", "throughput_max"), ("spread", "spread"), ("repeats", "repeats"),
    ("device_throughput_Bps", "device_throughput"), ("errors", "errors"),
    ("short_transfers", "short_transfers"), ("transfers", "transfers"), ("bytes", "bytes"),
    ("ceiling_Bps", "ceiling"), ("efficiency", "efficiency"),
)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def host_info() -> dict[str, str | None]:
    return {"hostname": socket.gethostname(), "kernel": platform.release(),
            "platform": platform.platform(),
            "python": platform.python_version(), "machine": platform.machine(),
            "emulated": emulated_host()}


def new_document(device: str, *, command: Sequence[str] | None = None,
                 units: Units = Units.MB) -> dict[str, Any]:
    """A result document for a run that is about to start: no bus, no points yet."""
    return {
        "busprobe_version": __version__, "schema": SCHEMA, "run_id": str(uuid.uuid4()),
        "device": device,
        "bus": None, "topology": [], "host": host_info(),
        "command": list(sys.argv if command is None else command),
        "started": utc_now(), "finished": None,
        "units": "bytes/s", "display_units": units.label,
        "plan": None, "complete": False, "error": None, "errors": 0, "points": [],
    }


def finish_document(doc: dict[str, Any], *, error: str | None = None) -> dict[str, Any]:
    """Stamp the end of a run and attach the verdict (when :mod:`busprobe.verdict` exists)."""
    doc["finished"] = utc_now()
    doc["error"] = error
    doc["complete"] = error is None
    doc["errors"] = sum(int(p.get("errors") or 0) for p in doc["points"])
    doc.pop("ceiling", None)
    doc.pop("ceilings", None)
    if doc["points"] and doc.get("bus"):
        ceilings = _assess(doc)
        if len(ceilings) == 1:
            doc["ceiling"] = ceilings[0]
        elif ceilings:
            doc["ceilings"] = ceilings
    return doc


def _assess(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The verdict entries; when the whole run cannot be judged (a direction the model does not
    cover, e.g. PCIe loopback), each direction is judged alone and the ones that can be are kept.
    """
    try:
        from .verdict import assess
    except ImportError:
        return []
    # The explanations are sentences with figures in them: in the units the run was shown in.
    units = next((u for u in Units if u.label == doc.get("display_units")), Units.MB)
    # Any failure of a verdict rule, a bug in it included: the measurement is worth more than
    # the verdict (a rule that raised AttributeError once lost a whole sweep's points).
    try:
        return list(assess(doc, units=units))
    except Exception as exc:
        whole = exc
    entries: list[dict[str, Any]] = []
    for direction in dict.fromkeys(p["direction"] for p in doc["points"]):
        part = dict(doc, points=[p for p in doc["points"] if p["direction"] == direction])
        try:
            entries += assess(part, units=units)
        except Exception as exc:
            # Keep the measurement, say why there is no verdict.
            log.warning("no verdict for %s: %s: %s", direction, type(exc).__name__, exc)
    if not entries:
        log.warning("no verdict: %s", whole)
    return entries


def ceilings_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The verdict entries of a document as a list (``ceilings``, ``[ceiling]`` or ``[]``)."""
    if doc.get("ceilings"):
        return list(doc["ceilings"])
    return [doc["ceiling"]] if doc.get("ceiling") else []


def write_json(doc: dict[str, Any], path: str) -> None:
    """Write ``doc`` to ``path`` (``"-"``: stdout) as :mod:`busprobe.result_file` says; a
    one-line :class:`~busprobe.result_file.ResultWriteError` on any failure."""
    write_result(path, document_bytes(doc))


def document_bytes(doc: dict[str, Any]) -> bytes:
    """The bytes of ``doc``'s JSON file (what :func:`write_json` writes and the results store
    keeps)."""
    return (json.dumps(doc, indent=2, allow_nan=False) + "\n").encode()


def write_csv(doc: dict[str, Any], path: str) -> None:
    """One row per point, columns :data:`CSV_COLUMNS` (written as :func:`write_json` is)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header for header, _ in CSV_COLUMNS)
    for point in doc["points"]:
        writer.writerow("" if point.get(key) is None else point[key] for _, key in CSV_COLUMNS)
    write_result(path, buffer.getvalue())


def load_results(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a result JSON written by ``busprobe sweep``; :class:`ValueError` (one line) if it is
    not one, checked against :mod:`busprobe.result_schema` once, here."""
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(describe(exc, f"cannot read {path}")) from None
    return parse_results(text, str(path))


def parse_results(text: bytes, name: str) -> dict[str, Any]:
    """The result document in ``text`` (the bytes of a file called ``name``), checked as
    :func:`load_results` checks it."""
    path = name
    try:
        # NaN and Infinity are not JSON; Python's reader would take them and a reader later
        # would compare or plot them.
        doc = json.loads(text, parse_constant=_refuse_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not JSON: {exc}") from None
    except RecursionError:
        raise ValueError(f"{path} is not a busprobe result (nested too deep)") from None
    check_document(doc, str(path))
    return doc


def _refuse_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


def _timing_note(points: list[dict[str, Any]]) -> list[str]:
    """What the two percentages are, and why host and device figures differ, when they do."""
    ratios = [p["throughput"] / p["device_throughput"] - 1 for p in points
              if p.get("device_throughput") and p.get("throughput")]
    if not ratios:
        return []
    line = ("% link: device-timed (whole bus intervals) over what the link allows; % ceiling: "
            "host-timed over this point's model (host profile, length, queue depth).")
    if max(abs(r) for r in ratios) >= 0.001:
        line += (f" Host-timed figures differ from the device's by {min(ratios) * 100:+.1f}.."
                 f"{max(ratios) * 100:+.1f} %: the host's window runs from the first submission "
                 "to the last completion, so it adds start-up and completion time and leaves "
                 "out the idle end of the last bus interval.")
    return [line]


def _link_note(points: list[dict[str, Any]]) -> list[str]:
    """The link section of a PCIe run: the soft endpoint's state at the last point and its
    counters summed over the points (``telemetry.link``,
    :mod:`busprobe.backends.pcie.link_counters`), or that the PHY has none."""
    links = [p["telemetry"]["link"] for p in points if (p.get("telemetry") or {}).get("link")]
    if not links:
        return []
    if not links[-1].get("present"):
        return [f"link: {links[-1].get('note')}"]
    last = links[-1]
    totals: dict[str, int] = {}
    for link in links:
        for name, value in (link.get("counters") or {}).items():
            totals[name] = totals.get(name, 0) + value
    faults = ", ".join(f"{value} {name}" for name, value in totals.items())
    up = "up" if last["link_up"] else "DOWN"
    flag = " !!" if any(totals.get(name) for name in _LINK_FAULTS) else ""
    return [f"link: {last['state']}, {up}, x{last['width']} {last['speed'] or '-'}; during the "
            f"points: {faults}{flag}"]


#: Link counters that say the link misbehaved (the rest count normal events).
_LINK_FAULTS = ("recoveries", "replays", "replay_timeouts", "naks", "duplicates",
                "protocol_errors", "overflows")


def format_table(doc: dict[str, Any], units: Units = Units.MB) -> str:
    """The human summary of a run: one line per point, then what went wrong, loudly."""
    rows = [("dir", "length", "qd", "setting", f"host {units.label}", "mean ± spread",
             f"device {units.label}", "% link", "% ceiling", "errors")]
    # The device-run (the PCIe SoC's firmware moving the data itself), when the sweep ran it.
    runs = any(p.get("device_run_throughput") for p in doc["points"])
    if runs:
        rows[0] = (*rows[0][:7], f"device-run {units.label}", *rows[0][7:])
    for p in doc["points"]:
        setting = " ".join(f"{k}={p[k]}" for k in ("mps", "mrrs") if p.get(k) is not None)
        # Repeats as measurements with error bars: mean ± half the range (stats.error_bar).
        mean, _, _ = error_bar(p)
        rng = f"{units.convert(mean):.2f} ± {units.convert(point_spread(p)):.2f}"
        device = p.get("device_throughput")
        rows.append((
            p["direction"], format_size(p["length"]), str(p["queue_depth"]), setting or "-",
            mark(f"{units.convert(p['throughput']):.2f}", p["throughput"],
                 p.get("link_ceiling")), rng,
            "-" if device is None else f"{units.convert(device):.2f}",
            "-" if not p.get("link_efficiency") else f"{100 * p['link_efficiency']:.1f}",
            "-" if not p.get("efficiency") else f"{100 * p['efficiency']:.1f}",
            str(p["errors"]) + (" !!" if p["errors"] else "")))
        if runs:
            run = p.get("device_run_throughput")
            rows[-1] = (*rows[-1][:7], "-" if not run else f"{units.convert(run):.2f}",
                        *rows[-1][7:])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True))
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines += _timing_note(doc["points"])
    lines += _link_note(doc["points"])
    lines += [note for p in doc["points"] if (note := point_note(p, units))]
    bad = [p for p in doc["points"] if p["errors"]]
    if bad:
        total = sum(p["errors"] for p in bad)
        lines.append(f"!! DATA ERRORS: {total} in {len(bad)} of {len(doc['points'])} points "
                     "(pattern mismatches + lost/duplicated bytes + device-detected; "
                     "error_detail in the JSON says which); "
                     "those figures are not trustworthy")
    shallow = [p for p in doc["points"]
               if p.get("queue_depth_in_force", p["queue_depth"]) < p["queue_depth"]]
    if shallow:
        lines.append(f"note: {len(shallow)} point(s) moved fewer transfers per repeat than their "
                     "queue depth, so the queue never filled; queue_depth_in_force in the JSON "
                     "says how deep it got")
    for entry in ceilings_of(doc):
        label = " ".join(str(entry[k]) for k in ("direction", "mps") if entry.get(k) is not None)
        verdict = entry.get("verdict", "?")
        lines.append(f"{label or 'verdict'}: {verdict}: {entry.get('explanation', '')}".rstrip())
    if not doc.get("complete", True):
        lines.append(f"!! INCOMPLETE: {doc.get('error')} ({len(doc['points'])} points kept)")
    return "\n".join(lines)
