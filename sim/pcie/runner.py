"""Run a cocotb test module against the PCIe core's Verilator model (from pytest or a script).

``run_cocotb(model, module_dir, module, testcase, run_name, **params)`` starts the simulator
once for ``testcase`` of ``module`` (found in ``module_dir``), passes ``params`` as JSON in
``$BUSPROBE_PCIE_CASE`` (``plusargs`` go to the simulator) and returns the JSON lines the test
appended to ``$BUSPROBE_PCIE_RESULTS``. Logs and results land in
``<model>/runs/<testcase>-<run_name>/``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["run_cocotb"]


def run_cocotb(model: Path, module_dir: Path, module: str, testcase: str, run_name: str,
               plusargs: Sequence[str] = (), **params: Any) -> list[dict[str, Any]]:
    from busprobe.toolchain import apply_verilator_env
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    apply_verilator_env()
    # Absolute: the simulator runs in run_dir, where a relative results path would not be ours.
    run_dir = Path(model).resolve() / "runs" / f"{testcase}-{run_name}"
    run_dir.mkdir(parents=True, exist_ok=True)
    results = run_dir / "results.jsonl"
    results.unlink(missing_ok=True)
    # The runner hands the simulator this process's sys.path as PYTHONPATH (it overrides
    # extra_env), so the module's folder goes on sys.path for the duration of the call.
    sys.path.insert(0, str(module_dir))
    try:
        xml = _test(get_runner("verilator"), module, testcase, model, run_dir, params, results,
                    plusargs)
    except SystemExit:  # cocotb's runner exits when a test fails
        xml = run_dir / "results.xml"
    finally:
        sys.path.remove(str(module_dir))
    total, failed = get_results(Path(xml)) if Path(xml).exists() else (0, 1)
    if total != 1 or failed:
        raise AssertionError(f"cocotb {testcase} failed: see {run_dir / 'sim.log'}")
    if not results.exists():
        return []
    return [json.loads(line) for line in results.read_text().splitlines()]


def _test(runner, module: str, testcase: str, model: Path, run_dir: Path,
          params: dict[str, Any], results: Path, plusargs: Sequence[str]) -> Path:
    from .testbench import TIMESCALE, TOPLEVEL

    return runner.test(
        test_module=module, hdl_toplevel=TOPLEVEL, hdl_toplevel_lang="verilog",
        testcase=testcase, build_dir=str(model), test_dir=str(run_dir), timescale=TIMESCALE,
        results_xml=str(run_dir / "results.xml"), log_file=str(run_dir / "sim.log"),
        plusargs=list(plusargs),
        extra_env={"BUSPROBE_PCIE_CASE": json.dumps(params),
                   "BUSPROBE_PCIE_RESULTS": str(results)},
    )
