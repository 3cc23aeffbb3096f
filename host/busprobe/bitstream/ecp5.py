"""``busprobe build`` for ECP5 boards: Amaranth + YoWASP yosys/nextpnr-ecp5/ecppack.

Builds are cached (Glasgow's build-plan idea): the key is the digest of Amaranth's build plan
(RTLIL, pin constraints, scripts) plus the versions of the packages that shape the bitstream, so
an unchanged design is never rebuilt and ``make bench`` reuses what ``make test`` built. A build
directory counts only once its ``build.json`` is written, and that happens only when timing is met:
every clock the design declares is in nextpnr's report, timed at its own frequency
(:func:`~.clocks.check_clocks`), and reaches it. A build that misses keeps its figures
(``timing-failed.json``) and no bitstream; asking for it again raises the same
:class:`~.result.TimingNotMet` without rebuilding (``force`` rebuilds).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from busprobe.gateware.boards import Board
from busprobe.protocol.usb2 import CLOCK_HZ as ULPI_CLOCK_HZ

from ..toolchain import ecp5_toolchain_env, toolchain_versions
from .clocks import check_clocks
from .designs import BuildError, Design
from .netlist import (
    NETLIST_FILE,
    RECORD_FILE,
    NetlistRecord,
    load_record,
    record_netlist,
    synthesize,
)
from .nextpnr_report import critical_paths, parse_nextpnr_report
from .result import RESULT_FILE, TIMING_FAILED_FILE, BuildResult

if TYPE_CHECKING:
    from amaranth.build.run import BuildPlan

__all__ = ["prepare_ecp5", "build_ecp5", "ecp5_cache_dir", "declared_clocks", "ecp5_netlist"]

log = logging.getLogger(__name__)

TOP_NAME = "top"
#: Part of the cache key: bump when what a build records (``build.json``) changes.
FLOW_VERSION = 2


def _load(spec: str) -> type:
    module_name, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def prepare_ecp5(board: Board, design: Design, *, seed: int | None = None) -> tuple:
    """Elaborate ``design`` on ``board``: ``(platform, Amaranth build plan)``, no tool run.

    ``seed``: nextpnr's placement seed (None: nextpnr's default).
    """
    from busprobe.gateware.boards.usb2_top import Usb2BoardTop

    if design.bus not in ("usb2", "usb3", "pcie-dcu", "pcie"):
        raise BuildError(f"board {board.name} is built here for USB designs and the soft PCIe "
                         f"endpoint's, not {design.name!r}")
    platform = _load(board.platform)()
    if design.bus == "usb3":
        from busprobe.gateware.usb3.board_top import Usb3BoardTop

        top = Usb3BoardTop(design=design.load())
    elif design.bus in ("pcie-dcu", "pcie"):
        from busprobe.gateware.boards.versa_pcie import VersaPcieTop

        top = VersaPcieTop(design=_soft_pcie_design(design))
    else:
        top = Usb2BoardTop(design=design.load(), phy=board.phy)
    # nextpnr writes a machine-readable report; timing failures are judged from it by this flow
    # (with a message naming the clock) instead of nextpnr stopping before any report exists.
    nextpnr_opts = f"--report {TOP_NAME}.report.json --timing-allow-fail"
    if seed is not None:
        nextpnr_opts += f" --seed {seed}"
    if design.placer_timing_weight is not None:
        nextpnr_opts += f" --placer-heap-timingweight {design.placer_timing_weight}"
    overrides = {}
    if design.mapping_delay_ps is not None:
        overrides["script_after_read"] = f"scratchpad -set abc9.D {design.mapping_delay_ps}"
    plan = platform.build(top, name=TOP_NAME, do_build=False, nextpnr_opts=nextpnr_opts,
                          **overrides)
    return platform, plan


def _soft_pcie_design(design: Design):
    """The design to put on a DCU's soft PCIe PHY: the endpoint alone, or (``pcie``, whose
    AC701 build is LiteX's around the hard IP) the same SoC around the soft endpoint."""
    if design.bus == "pcie":
        from busprobe.build_cache import build_root
        from busprobe.gateware.boards.versa_pcie_soc import VersaPcieSoc

        from .firmware import build_firmware

        return functools.partial(VersaPcieSoc, firmware=list(build_firmware().words),
                                 verilog_dir=build_root() / "gateware" / "pcie")
    return design.load()


def declared_clocks(platform: object, design: Design) -> tuple[dict[str, float], tuple[str, ...]]:
    """The clocks a build of ``design`` has (domain -> MHz) and those that must be timed.

    SuperSpeed: the board top's clocks, all required (``ss`` and the SerDes' ``pclk``). PCIe on a
    DCU: the Versa top's, all required (``link``, the DCU's ``pclk``, the control clock ``ctl``).
    USB 2.0: the platform's domains (LUNA-style platforms list them) or the 60 MHz ULPI domain,
    the design's own domain required.
    """
    if design.bus == "usb3":
        from busprobe.gateware.usb3.board_top import CLOCKS_MHZ

        return dict(CLOCKS_MHZ), tuple(CLOCKS_MHZ)
    if design.bus in ("pcie-dcu", "pcie"):
        from busprobe.gateware.boards.versa_pcie import CLOCKS_MHZ as PCIE_CLOCKS_MHZ

        return dict(PCIE_CLOCKS_MHZ), tuple(PCIE_CLOCKS_MHZ)
    declared = getattr(platform, "DEFAULT_CLOCK_FREQUENCIES_MHZ",
                       {design.clock_domain: ULPI_CLOCK_HZ / 1e6})
    return {domain: float(mhz) for domain, mhz in declared.items()}, (design.clock_domain,)


def ecp5_cache_dir(root: Path, board: Board, design: Design, plan: BuildPlan) -> Path:
    """``root/gateware/<board>-<design>-<key>``: key = plan digest + toolchain versions."""
    digest = hashlib.sha256(plan.digest())
    digest.update(json.dumps({"flow": FLOW_VERSION, **toolchain_versions()},
                             sort_keys=True).encode())
    return root / "gateware" / f"{board.name}-{design.name}-{digest.hexdigest()[:12]}"


def build_ecp5(board: Board, design: Design, *, root: Path, out: Path | None = None,
               force: bool = False, seed: int | None = None) -> BuildResult:
    """Build (or reuse) the bitstream of ``design`` on ``board``.

    Raises :class:`BuildError` when a tool fails or a clock is not timed at its frequency, and
    its subclass :class:`~.result.TimingNotMet` (with the figures) when a clock misses it.
    """
    platform, plan = prepare_ecp5(board, design, seed=seed)
    workdir = ecp5_cache_dir(root, board, design, plan)
    with _key_lock(workdir):
        result_file, failed_file = workdir / RESULT_FILE, workdir / TIMING_FAILED_FILE
        if result_file.exists() and not force:
            result = _with_critical_paths(BuildResult.load(result_file))
            result.cached = True
        elif failed_file.exists() and not force:
            failed = _with_critical_paths(BuildResult.load(failed_file))
            failed.cached = True
            failed.check_timing(failed_file)
            raise BuildError(f"{failed_file} says timing was not met, yet every clock is met")
        else:
            result = _run(plan, board, design, workdir, *declared_clocks(platform, design),
                          seed=seed)
    if out is not None:
        result = result.copy_to(out)
    return result


def ecp5_netlist(board: Board, design: Design, *, root: Path) -> NetlistRecord:
    """The post-synthesis netlist of ``design`` on ``board`` for the current sources.

    From the build cache directory of the current key: the board build's netlist if that
    directory holds one whose record still holds, else yosys alone is run there (the build
    script's first step; seconds, where place and route take minutes). A finished board build
    is never thrown away for it: one from before netlists were recorded has its netlist
    recorded now; one whose netlist changed after it was recorded is built again, bitstream
    and netlist together.
    """
    platform, plan = prepare_ecp5(board, design)
    workdir = ecp5_cache_dir(root, board, design, plan)
    with _key_lock(workdir):
        record = load_record(workdir)
        built = (workdir / RESULT_FILE).exists()
        if record is None and built and not (workdir / RECORD_FILE).exists():
            record = record_netlist(workdir, source="board build",
                                    seconds=BuildResult.load(workdir / RESULT_FILE).build_seconds)
        elif record is None and built:
            log.warning("rebuilding %s on %s: its netlist changed after the build",
                        design.name, board.name)
            try:
                _run(plan, board, design, workdir, *declared_clocks(platform, design),
                     seed=None)
            except BuildError:
                pass  # timing: the netlist is recorded all the same; a tool failure: below
            record = load_record(workdir)
        if record is None:
            log.info("synthesizing %s on %s (netlist only)", design.name, board.name)
            record = synthesize(plan, workdir, ecp5_toolchain_env()["YOSYS"])
    return record


@contextmanager
def _key_lock(workdir: Path) -> Iterator[None]:
    """One build per key at a time (parallel test workers, make test next to make bench): the
    others wait here, then find what the first one built."""
    workdir.parent.mkdir(parents=True, exist_ok=True)
    with open(workdir.parent / f"{workdir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _run(plan: BuildPlan, board: Board, design: Design, workdir: Path,
         domains_mhz: dict[str, float], required: tuple[str, ...], *,
         seed: int | None) -> BuildResult:
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
    # The netlist nextpnr packed, recorded before the timing verdict: a design that misses
    # timing can still be simulated at gate level.
    # (A flow whose yosys writes no JSON, as the tests' stand-in tools, records none.)
    netlist = record_netlist(workdir, source="board build", seconds=seconds) \
        if (workdir / NETLIST_FILE).exists() else None
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
               "build_dir": str(workdir),
               **({"netlist": netlist.netlist, "netlist_sha256": netlist.sha256}
                  if netlist else {})}, nextpnr_seed=seed)
    check_clocks(result, declared=domains_mhz, required=required)
    _with_critical_paths(result)
    if result.failing_clocks():
        # Keep the figures, never the bitstream: it must not be flashed or taken from the
        # cache as if it were good.
        bitstream.unlink()
        result.bitstream = None
        failed = workdir / TIMING_FAILED_FILE
        result.save(failed)
        result.check_timing(failed)
    result.save(workdir / RESULT_FILE)
    return result


def _with_critical_paths(result: BuildResult) -> BuildResult:
    """``result`` with each clock's worst path in ``extra["critical_paths"]``, read from its
    nextpnr report (a build recorded before paths were, or a report without any: as it is)."""
    report = Path(result.extra.get("nextpnr_report", ""))
    if "critical_paths" not in result.extra and report.is_file():
        nets = {clock.net: clock.domain for clock in result.clocks}
        paths = critical_paths(report, net_domains=nets)
        if paths:
            result.extra["critical_paths"] = [asdict(path) for path in paths]
    return result


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
