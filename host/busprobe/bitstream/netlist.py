"""The netlist a bitstream is packed from: yosys' post-synthesis JSON, recorded in the build cache.

An ECP5 build (:mod:`.ecp5`) runs yosys (``synth_ecp5`` writes ``top.json``), then nextpnr reads
that ``top.json``, places, routes and packs it into the bitstream. The same ``top.json`` is what
gate-level simulation (:mod:`busprobe.sim.netlist`) runs, so it stays in the build directory
beside the bitstream, and :data:`RECORD_FILE` (``netlist.json``) ties it to that directory's key
(design + toolchain digest) with the file's SHA-256.

A netlist can come from two runs, both in the same cache directory:

* the board build (``busprobe build``): its yosys run's ``top.json``, recorded once the build
  script finished (before the timing verdict, so a design that misses timing still has its
  netlist);
* synthesis alone (:func:`synthesize`): the first step of the same build script, for a test
  that needs the netlist but not the minutes of place and route. A later board build starts its
  directory over and writes the netlist again from the same yosys script and inputs.

A record whose netlist is missing or whose SHA-256 no longer matches is not a netlist: the
caller synthesizes again, never reuses it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from .result import BuildError

__all__ = ["NETLIST_FILE", "RECORD_FILE", "NetlistRecord", "record_netlist", "load_record",
           "synthesize"]

log = logging.getLogger(__name__)

#: yosys' output in Amaranth's ECP5 build script (``write_json top.json``); nextpnr's input.
NETLIST_FILE = "top.json"
RECORD_FILE = "netlist.json"


@dataclass(frozen=True)
class NetlistRecord:
    """A post-synthesis netlist in the build cache.

    Attributes
    ----------
    netlist : str
        Path of yosys' JSON netlist (``<build dir>/top.json``).
    key : str
        The build directory's key (design + toolchain digest), as in ``build.json``.
    sha256 : str
        Of the netlist file, checked on every load.
    source : str
        ``"board build"`` (the bitstream in the same directory was packed from it) or
        ``"synthesis"`` (yosys alone, same script; no bitstream yet).
    synth_seconds : float
        Wall time of the run that wrote it (the whole build for ``"board build"``).
    """

    netlist: str
    key: str
    sha256: str
    source: str
    synth_seconds: float

    @property
    def path(self) -> Path:
        return Path(self.netlist)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record_netlist(workdir: Path, *, source: str, seconds: float) -> NetlistRecord:
    """Record ``workdir``'s ``top.json`` (written by yosys there) and return the record."""
    netlist = workdir / NETLIST_FILE
    if not netlist.exists():
        raise BuildError(f"yosys wrote no {NETLIST_FILE} in {workdir}")
    record = NetlistRecord(netlist=str(netlist), key=workdir.name.rsplit("-", 1)[-1],
                           sha256=_sha256(netlist), source=source,
                           synth_seconds=round(seconds, 1))
    (workdir / RECORD_FILE).write_text(json.dumps(asdict(record), indent=2) + "\n")
    return record


def load_record(workdir: Path) -> NetlistRecord | None:
    """The record of ``workdir``, or ``None`` if there is none or it no longer holds.

    It no longer holds when the netlist is gone or changed since it was recorded (its SHA-256
    differs), or when it was recorded for another key: such a netlist is never simulated.
    """
    path = workdir / RECORD_FILE
    try:
        record = NetlistRecord(**json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError) as exc:
        log.warning("%s is not a netlist record (%s); synthesizing again", path, exc)
        return None
    netlist = workdir / NETLIST_FILE
    why = None
    if record.key != workdir.name.rsplit("-", 1)[-1]:
        why = f"it was recorded for key {record.key}"
    elif not netlist.exists():
        why = f"{NETLIST_FILE} is missing"
    elif _sha256(netlist) != record.sha256:
        why = f"{NETLIST_FILE} changed after it was recorded"
    if why:
        log.warning("netlist in %s is not used: %s; synthesizing again", workdir, why)
        return None
    return replace(record, netlist=str(netlist))  # where it is now, if the cache moved


def synthesize(plan: object, workdir: Path, yosys: str) -> NetlistRecord:
    """Run the yosys step of the build script of ``plan`` (an Amaranth ``BuildPlan``) alone.

    The files are the plan's own (RTLIL, ``top.ys``); the command is the script's first line,
    ``$YOSYS -q -l top.rpt top.ys``. ``workdir`` is started over.
    """
    if workdir.exists():
        shutil.rmtree(workdir)
    plan.extract(str(workdir))  # type: ignore[attr-defined]
    log.info("synthesizing in %s", workdir)
    start = time.monotonic()
    done = subprocess.run([yosys, "-q", "-l", "top.rpt", "top.ys"], cwd=workdir,
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise BuildError(f"yosys failed (status {done.returncode}); log: {workdir / 'top.rpt'}")
    return record_netlist(workdir, source="synthesis", seconds=time.monotonic() - start)
