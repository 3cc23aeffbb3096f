"""Shared fixtures of the USB2 simulation tests: the models, each built once per run.

``usb2_model`` is the lean default design (what ``sim:usb2`` runs), ``usb2_full_model`` the
full one (``sim:usb2?design=full``: BOT framer, packet-shape and receive-drop counters), built
only when a test asks for it. Both are cached by content hash in the build directory (and
locked there, so two pytest workers asking at once build once).
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def usb2_model() -> Path:
    from busprobe.sim.usb2.simulator_build import build_usb2_simulator

    return build_usb2_simulator("busprobe")


@pytest.fixture(scope="session")
def usb2_full_model() -> Path:
    from busprobe.sim.usb2.simulator_build import build_usb2_simulator

    return build_usb2_simulator("full")


@pytest.fixture(scope="session")
def usb2_storage_model() -> Path:
    from busprobe.sim.usb2.simulator_build import build_usb2_simulator

    return build_usb2_simulator("storage")
