"""The PCIe core's Verilator model, built (or found in the build cache) once per test run."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def pcie_model() -> Path:
    from busprobe.sim.pcie.testbench import build_pcie_simulator

    return build_pcie_simulator()
