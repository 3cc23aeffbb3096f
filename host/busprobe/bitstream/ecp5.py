"""``busprobe build`` for ECP5 boards: Amaranth + YoWASP yosys/nextpnr-ecp5/ecppack.

Builds are cached (Glasgow's build-plan idea): the key is the digest of Amaranth's build plan
(RTLIL, pin constraints, scripts) plus the versions of the packages that shape the bitstream, so
an unchanged design is never rebuilt and ``make bench`` reuses what ``make test`` built. A build
directory counts only once its ``build.json`` is written, and that happens only when timing is met.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from busprobe.gateware.boards import Board
from busprobe.protocol.usb2 import CLOCK_HZ as ULPI_CLOCK_HZ

from ..toolchain import ecp5_toolchain_env, toolchain_versions
from .designs import BuildError, Design
from .nextpnr_report import parse_nextpnr_report
from .result import RESULT_FILE, BuildResult

if TYPE_CHECKING:
    from amaranth.build.run import BuildPlan

__all__ = ["prepare_ecp5", "build_ecp5", "ecp5_cache_dir"]

log = logging.getLogger(__name__)

TOP_NAME = "top"
#: Part of the cache key: bump when what a build records (``build.json``) changes.
FLOW_VERSION = 2


def _load(spec: str) -> type:
    module_name, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def prepare_ecp5(board: Board, design: Design) -> tuple:
    """Elaborate ``design`` on ``board``: ``(platform, Amaranth build plan)``, no tool run."""
    from busprobe.gateware.boards.usb2_top import Usb2BoardTop

    if design.bus not in ("usb2", "usb3"):
        raise BuildError(f"board {board.name} carries USB designs, not {design.name!r}")
    platform = _load(board.platform)()
    if design.bus == "usb3":
        from busprobe.gateware.usb3.board_top import CLOCK_FREQUENCIES_MHZ, Usb3BoardTop

        top = Usb3BoardTop(design=design.load())
        # The domains that top makes, for the report (the platform itself declares none).
        platform.DEFAULT_CLOCK_FREQUENCIES_MHZ = CLOCK_FREQUENCIES_MHZ
    else:
        top = Usb2BoardTop(design=design.load(), phy=board.phy)
    # nextpnr writes a machine-readable report; timing failures are judged from it by this flow
    # (with a message naming the clock) instead of nextpnr stopping before any report exists.
    nextpnr_opts = f"--report {TOP_NAME}.report.json --timing-allow-fail"
    overrides = {}
    if design.mapping_delay_ps is not None:
        overrides["script_after_read"] = f"scratchpad -set abc9.D {design.mapping_delay_ps}"
    plan = platform.build(top, name=TOP_NAME, do_build=False, nextpnr_opts=nextpnr_opts,
                          **overrides)
    return platform, plan


def ecp5_cache_dir(root: Path, board: Board, design: Design, plan: BuildPlan) -> Path:
    """``root/gateware/<board>-<design>-<key>``: key = plan digest + toolchain versions."""
    digest = hashlib.sha256(plan.digest())
    digest.update(json.dumps({"flow": FLOW_VERSION, **toolchain_versions()},
                             sort_keys=True).encode())
    return root / "gateware" / f"{board.name}-{design.name}-{digest.hexdigest()[:12]}"


def build_ecp5(board: Board, design: Design, *, root: Path, out: Path | None = None,
               force: bool = False) -> BuildResult:
    """Build (or reuse) the bitstream of ``design`` on ``board``.

    Raises :class:`BuildError` when a tool fails or a clock misses its constraint.
    """
    platform, plan = prepare_ecp5(board, design)
    workdir = ecp5_cache_dir(root, board, design, plan)
    workdir.parent.mkdir(parents=True, exist_ok=True)
    # One build per key at a time (parallel test workers, make test next to make bench): the
    # others wait here, then find build.json.
    with open(workdir.parent / f"{workdir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result_file = workdir / RESULT_FILE
        if result_file.exists() and not force:
            result = BuildResult.load(result_file)
            result.cached = True
        else:
            # LUNA-style platforms list their domains; else the design's 60 MHz ULPI domain.
            domains_mhz = getattr(platform, "DEFAULT_CLOCK_FREQUENCIES_MHZ",
                                  {design.clock_domain: ULPI_CLOCK_HZ / 1e6})
            result = _run(plan, board, design, workdir, domains_mhz)
    if out is not None:
        result = result.copy_to(out)
    return result


def _run(plan: BuildPlan, board: Board, design: Design, workdir: Path,
         domains_mhz: dict[str, float]) -> BuildResult:
    if workdir.exists():
        shutil.rmtree(workdir)  # an earlier, interrupted or failed build
    env = {**os.environ, **ecp5_toolchain_env()}
    log.info("building %s on %s in %s", design.name, board.name, workdir)
    start = time.monotonic()
    try:
        plan.execute_local(str(workdir), env=env)
    except Exception as exc:  # amaranth raises CalledProcessError from its build script
        raise BuildError(f"{design.name} on {board.name}: {_first_tool_error(workdir)}; "
                         f"logs in {workdir}") from exc
    seconds = time.monotonic() - start
    bitstream = workdir / f"{TOP_NAME}.bit"
    if not bitstream.exists():
        raise BuildError(f"{design.name} on {board.name}: no bitstream in {workdir}")
    report = parse_nextpnr_report(workdir / f"{TOP_NAME}.report.json", domains_mhz=domains_mhz,
                                  yosys_log=workdir / f"{TOP_NAME}.rpt")
    result = BuildResult(
        board=board.name, design=design.name, design_class=_class_name(design),
        fpga=board.fpga, bitstream=str(bitstream), clocks=report.clocks,
        utilisation=report.utilisation, build_seconds=round(seconds, 1),
        toolchain=toolchain_versions(), key=workdir.name.rsplit("-", 1)[-1],
        extra={"nextpnr_report": str(workdir / f"{TOP_NAME}.report.json"),
               "build_dir": str(workdir)})
    _check_design_clock(result, design, domains_mhz)
    if result.failing_clocks():
        # Keep the figures, and move the bitstream out of the way: it must not be flashed or
        # taken from the cache as if it were good.
        failed = workdir / "timing-failed.json"
        result.save(failed)
        bitstream.rename(bitstream.with_suffix(".bit.timing-failed"))
        result.check_timing(failed)
    result.save(workdir / RESULT_FILE)
    return result


def _check_design_clock(result: BuildResult, design: Design,
                        domains_mhz: dict[str, float]) -> None:
    """The design's clock must be timed, against its real frequency.

    An unconstrained clock has no Fmax, and one nextpnr constrains by default (12 MHz) passes
    trivially: either way "timing met" would mean nothing.
    """
    where = f"{design.name} on {result.board}"
    clocks = [c for c in result.clocks if c.domain == design.clock_domain]
    if not clocks:
        raise BuildError(f"{where}: nextpnr reports no timing for the {design.clock_domain} "
                         f"domain (clocks: {', '.join(c.net for c in result.clocks) or 'none'})")
    expected = domains_mhz.get(design.clock_domain)
    if expected and abs(clocks[0].constraint_mhz - expected) > 0.01 * expected:
        raise BuildError(f"{where}: the {design.clock_domain} domain was timed at "
                         f"{clocks[0].constraint_mhz:.2f} MHz, not its {expected:.2f} MHz: "
                         "clock constraint lost")


def _first_tool_error(workdir: Path) -> str:
    """The first ``ERROR`` line of the yosys (``.rpt``) or nextpnr (``.tim``) log."""
    for log_name in (f"{TOP_NAME}.rpt", f"{TOP_NAME}.tim"):
        path = workdir / log_name
        if path.exists():
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith("ERROR"):
                    return f"{log_name}: {line.strip()}"
    return "toolchain failed"


def _class_name(design: Design) -> str:
    cls = design.load()
    return f"{cls.__module__}:{cls.__qualname__}"
