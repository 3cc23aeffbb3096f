"""Shared fixtures of the USB2 simulation tests: the model, built once per run."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def usb2_model() -> Path:
    from busprobe.sim.usb2.simulator_build import build_usb2_simulator

    return build_usb2_simulator("busprobe")
