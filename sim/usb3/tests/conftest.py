"""Shared fixtures of the USB3 simulation tests: the model, built once per run."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def usb3_model() -> Path:
    from busprobe.sim.usb3.simulator_build import build_usb3_simulator

    return build_usb3_simulator("busprobe")


@pytest.fixture(scope="session")
def usb3_storage_model() -> Path:
    from busprobe.sim.usb3.simulator_build import build_usb3_simulator

    return build_usb3_simulator("storage")
