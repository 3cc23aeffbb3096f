"""The PCIe SoC's firmware (``firmware/``, C), built once per source hash.

:func:`build_firmware` runs ``firmware/Makefile`` with the cross compiler
(:func:`busprobe.toolchain.firmware_compiler`) into ``<build root>/firmware-<hash>/``; the hash
covers the sources, the generated contract header (so a changed CSR map rebuilds it) and the
compiler's version, never paths. The image goes into the board's ROM
(:func:`busprobe.gateware.boards.pcie_target.build_pcie_target_soc`) and, as a ``$readmemh``
file, into the simulated SoC's when it starts (``busprobe.sim.pcie``): the same binary.
The sources travel with busprobe as package data (``busprobe.firmware``).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from busprobe.build_cache import build_root
from busprobe.protocol import c_header, pcie_soc
from busprobe.toolchain import FIRMWARE_CROSS, firmware_compiler

from .result import BuildError

__all__ = ["Firmware", "build_firmware", "firmware_source_dir", "IMAGE"]

IMAGE = "busprobe-firmware.bin"
_SUFFIXES = (".c", ".h")


@dataclass(frozen=True)
class Firmware:
    """A built firmware image.

    Attributes
    ----------
    binary : Path
        The ROM image (``busprobe-firmware.bin``, from address 0).
    memh : Path
        The same as 32-bit little-endian words, one per line (``$readmemh``).
    words : tuple of int
        The same again, for LiteX's ``integrated_rom_init``.
    """

    binary: Path
    memh: Path
    words: tuple[int, ...]


def firmware_source_dir() -> Path:
    return Path(str(resources.files("busprobe.firmware")))


def _digest(sources: Path, compiler_version: str) -> str:
    digest = hashlib.sha256(f"{compiler_version}|{c_header.render()}".encode())
    for path in sorted(sources.iterdir()):
        if path.suffix in _SUFFIXES or path.name == "Makefile":
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def build_firmware() -> Firmware:
    """Build (or find) the firmware; :class:`BuildError` in one line when it cannot be built."""
    try:
        _, version = firmware_compiler()
    except RuntimeError as exc:
        raise BuildError(str(exc)) from None
    sources = firmware_source_dir()
    out = build_root() / f"firmware-{_digest(sources, version)}"
    memh = out / "busprobe-firmware.memh"
    if not memh.exists():
        out.mkdir(parents=True, exist_ok=True)
        # Parallel test workers may build at once: the first builds, the others find it built.
        with open(out.parent / f"{out.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not memh.exists():
                _make(sources, out)
    data = (out / IMAGE).read_bytes()
    data += bytes(-len(data) % 4)
    words = tuple(int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4))
    if 4 * len(words) > pcie_soc.ROM_SIZE:
        raise BuildError(f"firmware of {4 * len(words)} bytes does not fit the "
                         f"{pcie_soc.ROM_SIZE}-byte ROM")
    return Firmware(out / IMAGE, memh, words)


def _make(sources: Path, out: Path) -> None:
    log = out / "make.log"
    with open(log, "w") as output:
        proc = subprocess.run(
            ["make", "-C", str(sources), f"BUILD={out}", f"PYTHON={sys.executable}",
             f"CROSS={FIRMWARE_CROSS}"],
            stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False,
            env={**os.environ, "MAKEFLAGS": ""})
    if proc.returncode != 0 or not (out / IMAGE).exists():
        raise BuildError(f"the firmware did not build (make exit status {proc.returncode}); "
                         f"see {log}")
    data = (out / IMAGE).read_bytes()
    data += bytes(-len(data) % 4)
    lines = [f"{int.from_bytes(data[i:i + 4], 'little'):08x}" for i in range(0, len(data), 4)]
    tmp = out / "busprobe-firmware.memh.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(out / "busprobe-firmware.memh")
