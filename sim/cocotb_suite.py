"""Runs a module of cocotb tests against a built Verilator model, one simulator process, and
reports each test's outcome, so a pytest file can present every cocotb test as its own case."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["run_cocotb_suite"]


def run_cocotb_suite(model: Path, out: Path, *, module: str | list[str], module_dir: Path,
                     toplevel: str,
                     testcases: list[str] | None = None, env: Mapping[str, str] | None = None,
                     figures_env: str | None = None,
                     **runner_args: Any) -> dict[str, str | None]:
    """Run the tests of ``module`` (one or several, in one simulator process; all, or
    ``testcases``) on ``model`` with results in ``out``; ``{test name: failure text or
    None}``. With ``figures_env``, that variable names ``out/figures.jsonl`` for the tests to
    record figures in (a JSON object a line), and each one recorded is printed afterwards.
    ``runner_args`` go to cocotb's ``Runner.test`` (a ``log_file``, say)."""
    from busprobe.toolchain import apply_verilator_env
    from cocotb_tools.runner import get_runner

    apply_verilator_env()
    results, figures = out / "results.xml", out / "figures.jsonl"
    if figures_env:
        env = {figures_env: str(figures), **(env or {})}
    # The runner passes this process's sys.path as the simulator's PYTHONPATH (overriding
    # extra_env), so the cocotb module's folder goes on sys.path for the call.
    sys.path.insert(0, str(module_dir))
    try:
        get_runner("verilator").test(
            test_module=module, hdl_toplevel=toplevel, hdl_toplevel_lang="verilog",
            build_dir=str(model), test_dir=str(out), results_xml=str(results),
            testcase=testcases, extra_env={"COCOTB_LOG_LEVEL": "WARNING", **(env or {})},
            **runner_args)
    except SystemExit:
        pass  # the runner exits when a test failed; the results file says which
    finally:
        sys.path.remove(str(module_dir))
    if figures_env and figures.exists():
        for line in figures.read_text().splitlines():
            print(json.loads(line))
    outcome: dict[str, str | None] = {}
    for case in ET.parse(results).getroot().iter("testcase"):
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        text = None if failure is None else (failure.get("message") or failure.text or "failed")
        outcome[case.get("name", "").rpartition(".")[2]] = text
    return outcome
