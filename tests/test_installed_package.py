"""An installed busprobe works on its own: wheel -> fresh venv -> the CLI, run outside the checkout.

The editable install of the project venv hides a whole class of bugs (files found next to the
sources, data that is not packaged, caches keyed by paths). Here the wheel is built from a copy of
the sources (building in place would write ``build/`` and ``*.egg-info`` into the checkout),
installed with ``--no-deps`` into a new venv whose third-party packages come from the project
venv through a ``.pth`` line (nothing is downloaded), and driven from a temporary folder.

A ``.pth`` line that names a directory only appends it to ``sys.path``; the ``.pth`` files inside
that directory are not processed, so the project venv's editable-install finder never loads and
the only busprobe importable is the installed one (checked below, not assumed).

The simulator build is a cache hit: the run uses the build directory of the rest of the test run,
and both the Verilog and the Verilator model are keyed by content hashes, so the installed copy
finds what the checkout built (also checked: no new build directory appears).
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from busprobe.build_cache import ENV_BUILD_DIR, build_root

CHECKOUT = Path(__file__).resolve().parents[1]
#: Never copied into the wheel's source tree, never compared before/after (caches, venvs, VCS).
_SKIP = {".git", ".venv", "build", "demo", "sim_build", "__pycache__", ".pytest_cache",
         "busprobe.egg-info", ".ruff_cache"}

pytestmark = pytest.mark.sim


def _run(argv, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{argv} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _checkout_files() -> dict[str, int]:
    """Relative path -> mtime of every file of the checkout outside caches and venvs."""
    cache = build_root()
    files = {}
    for dirpath, dirnames, filenames in os.walk(CHECKOUT):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if d not in _SKIP and here / d != cache]
        for name in filenames:
            path = here / name
            files[str(path.relative_to(CHECKOUT))] = path.stat().st_mtime_ns
    return files


def _build_entries() -> set[str]:
    root = build_root()
    return {str(p.relative_to(root)) for sub in ("sim", "gateware/usb2") if (root / sub).is_dir()
            for p in (root / sub).iterdir()}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    """A fresh venv with the busprobe wheel; ``{"venv", "python", "cwd", "env"}``."""
    from busprobe.sim.usb2.simulator_build import build_usb2_simulator

    # The checkout's simulator, built (or found) first: the installed run must hit this cache.
    build_usb2_simulator("busprobe")

    work = tmp_path_factory.mktemp("installed")
    src, dist, env_dir = work / "src", work / "dist", work / "venv"
    shutil.copytree(CHECKOUT, src, ignore=lambda _dir, names: [n for n in names if n in _SKIP])
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "-w", dist, src])
    (wheel,) = dist.glob("busprobe-*.whl")

    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
          "--no-index", wheel])
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    (Path(purelib.stdout.strip()) / "_project_dependencies.pth").write_text(
        sysconfig.get_path("purelib") + "\n")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env[ENV_BUILD_DIR] = str(build_root())
    cwd = work / "cwd"
    cwd.mkdir()
    return {"venv": env_dir, "python": python, "cwd": cwd, "env": env}


def test_only_the_installed_busprobe_is_importable(installed):
    probe = ("import json, sys, busprobe, busprobe.gateware.boards.constraints as c, busprobe.sim\n"
             "print(json.dumps({'busprobe': busprobe.__file__, 'sim': busprobe.sim.__file__,\n"
             "  'constraints': str(c.CONSTRAINTS_DIR),\n"
             "  'editable': [m for m in sys.modules if 'editable' in m]\n"
             "    + [getattr(f, '__name__', '') for f in sys.meta_path\n"
             "       if 'Editable' in getattr(f, '__name__', '')]}))")
    found = json.loads(_run([installed["python"], "-c", probe], cwd=installed["cwd"],
                            env=installed["env"]).stdout)
    assert found.pop("editable") == []
    for what, path in found.items():
        assert Path(path).is_relative_to(installed["venv"]), f"{what} imported from {path}"
    assert (Path(found["constraints"]) / "cynthion_r1_4.toml").is_file()


def test_installed_cli_models_and_sweeps_outside_the_checkout(installed):
    before, builds_before = _checkout_files(), _build_entries()
    run = {"cwd": installed["cwd"], "env": installed["env"]}

    model = _run(["busprobe", "model", "--device", "sim:pcie"], **run)
    assert "write:" in model.stdout and "MB/s" in model.stdout

    _run(["busprobe", "sweep", "--device", "sim:usb2", "--direction", "in", "--lengths", "4K",
          "--no-progress", "--json", "out.json"], **run)
    result = json.loads((installed["cwd"] / "out.json").read_text())
    assert result["complete"] and result["errors"] == 0
    assert [(p["direction"], p["length"], p["errors"]) for p in result["points"]] \
        == [("in", 4096, 0)] * len(result["points"]) and result["points"]
    assert result["points"][0]["throughput"] > 0

    assert _build_entries() == builds_before, "the installed copy missed the simulator cache"
    after = _checkout_files()
    changed = sorted(set(after) ^ set(before)
                     | {name for name in after.keys() & before.keys()
                        if after[name] != before[name]})
    assert not changed, f"the installed busprobe wrote into the checkout: {changed}"
