"""An installed busprobe works on its own: wheel -> fresh venv -> the CLI, run outside the checkout.

The editable install of the project venv hides a whole class of bugs (files found next to the
sources, data that is not packaged, caches keyed by paths, an extra that lacks a package). Here the
wheel is built from a copy of the sources (building in place would write ``build/`` and
``*.egg-info`` into the checkout), installed with ``--no-deps`` into a new venv, and driven from a
temporary folder. Its third-party packages are exactly what ``pip install 'busprobe[EXTRA]'``
would bring: the wheel's own requirements for that extra, followed through every package's
requirements (markers evaluated, as pip does), taken from the project venv (nothing is
downloaded): each such distribution's top-level files are linked into a folder the new venv reads
through a ``.pth`` line, and its console scripts are written into the new venv's ``bin/``. A
package the extra does not name is not importable there, as on a user's machine
(``make bench`` installs the wheel with ``[sim]`` from the package index for real).

A ``.pth`` line that names a directory only appends it to ``sys.path``; the ``.pth`` files inside
that directory are not processed, so the project venv's editable-install finder never loads and
the only busprobe importable is the installed one (checked below, not assumed).

The simulator build is a cache hit: the run uses the build directory of the rest of the test run,
and both the Verilog and the Verilator model are keyed by content hashes, so the installed copy
finds what the checkout built (also checked: no new build directory appears).
"""

import email
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
from busprobe.build_cache import ENV_BUILD_DIR, build_root
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

CHECKOUT = Path(__file__).resolve().parents[1]
#: Never copied into the wheel's source tree, never compared before/after (caches, venvs, VCS).
_SKIP = {".git", ".venv", "build", "demo", "sim_build", "__pycache__", ".pytest_cache",
         "busprobe.egg-info", ".ruff_cache"}

pytestmark = pytest.mark.sim
#: Set by this process's own builds (busprobe.toolchain, sim/verilator_build.py); an
#: installed busprobe must find its tools without them.
_BUILD_VARIABLES = ("PYTHONPATH", "VIRTUAL_ENV", "YOSYS", "NEXTPNR_ECP5", "ECPPACK",
                    "AMARANTH_USE_YOSYS", "VERILATOR_ROOT", "MAKEFLAGS")


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


def _wheel_requirements(wheel: Path) -> list[str]:
    """``Requires-Dist`` of the wheel's own metadata (not the project venv's editable install,
    which says what pyproject.toml said when ``make install`` last ran)."""
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        message = email.message_from_bytes(archive.read(metadata))
    return message.get_all("Requires-Dist") or []


def requirement_closure(wheel: Path, extras: tuple[str, ...]) -> set[str]:
    """The distributions ``pip install 'WHEEL[EXTRAS]'`` installs besides busprobe: the wheel's
    requirements for those extras, followed through every package's own, as pip follows them."""
    wanted: dict[str, frozenset[str]] = {}
    todo = [("busprobe", frozenset(extras))]
    while todo:
        name, asked = todo.pop()
        key = canonicalize_name(name)
        if key in wanted and asked <= wanted[key]:
            continue
        wanted[key] = extras_now = wanted.get(key, frozenset()) | asked
        requires = _wheel_requirements(wheel) if key == "busprobe" else \
            importlib.metadata.distribution(name).requires
        for text in requires or ():
            requirement = Requirement(text)
            if requirement.marker is None or any(requirement.marker.evaluate({"extra": extra})
                                                 for extra in extras_now or {""}):
                todo.append((requirement.name, frozenset(requirement.extras)))
    return set(wanted) - {"busprobe"}


def _link_distributions(names: set[str], folder: Path, scripts: Path, python: Path) -> None:
    """Each distribution's top-level files (package, modules, .dist-info) linked into
    ``folder``; its console scripts written into ``scripts``, run by ``python``."""
    folder.mkdir()
    site = Path(sysconfig.get_path("purelib"))
    for name in sorted(names):
        dist = importlib.metadata.distribution(name)
        for top in {Path(f).parts[0] for f in dist.files or ()}:
            if top in ("..", "__pycache__") or top.endswith(".pth"):
                continue  # scripts (written below), caches, the project venv's path hooks
            if (site / top).exists() and not (folder / top).exists():
                (folder / top).symlink_to(site / top)
        for entry in dist.entry_points.select(group="console_scripts"):
            module, _, attribute = entry.value.partition(":")
            script = scripts / entry.name
            script.write_text(f"#!{python}\nimport sys\nfrom {module} import "
                              f"{attribute.split('.')[0]}\nsys.exit({attribute}())\n")
            script.chmod(0o755)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The busprobe wheel, built from a copy of the checkout."""
    work = tmp_path_factory.mktemp("wheel")
    src, dist = work / "src", work / "dist"
    shutil.copytree(CHECKOUT, src, ignore=lambda _dir, names: [n for n in names if n in _SKIP])
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "-w", dist, src])
    (built,) = dist.glob("busprobe-*.whl")
    return built


def install(wheel: Path, work: Path, extras: tuple[str, ...]) -> dict:
    """A fresh venv in ``work`` with ``wheel`` and what ``busprobe[EXTRAS]`` brings;
    ``{"venv", "python", "cwd", "env"}``."""
    env_dir = work / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
          "--no-index", wheel])
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    _link_distributions(requirement_closure(wheel, extras), work / "dependencies",
                        env_dir / "bin", python)
    (Path(purelib.stdout.strip()) / "_busprobe_dependencies.pth").write_text(
        f"{work / 'dependencies'}\n")
    # Only the new venv's scripts and the system's tools (make, a C++ compiler) on PATH, and
    # none of the variables this test process set for its own builds (YOSYS, VERILATOR_ROOT):
    # the project venv's Yosys must not stand in for one the extra forgot.
    project = Path(sys.prefix).resolve()
    env = {k: v for k, v in os.environ.items() if k not in _BUILD_VARIABLES}
    env["PATH"] = os.pathsep.join([str(env_dir / "bin"), *(
        p for p in env.get("PATH", "").split(os.pathsep)
        if p and not Path(p).resolve().is_relative_to(project))])
    env[ENV_BUILD_DIR] = str(build_root())
    cwd = work / "cwd"
    cwd.mkdir()
    return {"venv": env_dir, "python": python, "cwd": cwd, "env": env}


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> dict:
    """``pip install 'busprobe[sim]'`` into a fresh venv: what a simulation user has."""
    from busprobe.sim.usb2.simulator_build import build_usb2_simulator

    # The checkout's simulator, built (or found) first: the installed run must hit this cache.
    build_usb2_simulator("busprobe")
    return install(wheel, tmp_path_factory.mktemp("installed"), ("sim",))


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


def test_the_sim_extra_alone_sweeps_sim_usb2_outside_the_checkout(installed):
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


@pytest.fixture(scope="module")
def installed_base(wheel, tmp_path_factory) -> dict:
    """``pip install busprobe``: the base install, for real hardware only."""
    return install(wheel, tmp_path_factory.mktemp("base"), ())


@pytest.mark.parametrize("argv, extra", [
    (["sweep", "--device", "sim:usb2", "--lengths", "4K"], "sim"),
    (["sweep", "--device", "sim:pcie", "--lengths", "4K"], "sim"),
    (["sweep", "--device", "sim:usb3", "--lengths", "4K"], "sim"),
    (["sim", "serve", "--usbredir", "127.0.0.1:0"], "sim"),
    (["build", "--board", "cynthion-r1.4", "--design", "usb2"], "build"),
    (["store", "ls", "--store", "sqlite:///lab.sqlite"], "store"),
    (["compare", "--store", "--group-by", "host"], "store"),
])
def test_a_missing_extra_is_one_line_naming_it(installed_base, argv, extra):
    proc = subprocess.run(["busprobe", *argv], capture_output=True, text=True,
                          cwd=installed_base["cwd"], env=installed_base["env"], timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("busprobe: error: ") and f"busprobe[{extra}]" in proc.stderr


def test_the_base_install_still_models_without_any_extra(installed_base):
    model = _run(["busprobe", "model", "--device", "sim:usb2", "--json", "-"],
                 cwd=installed_base["cwd"], env=installed_base["env"])
    assert json.loads(model.stdout)["ceilings"]


def test_the_store_extra_alone_migrates_pushes_and_exports_outside_the_checkout(
        wheel, tmp_path_factory):
    """The Alembic scripts travel in the wheel: a new store is created from them."""
    store = install(wheel, tmp_path_factory.mktemp("store"), ("store",))
    fixture = Path(__file__).parent / "fixtures" / "results" / "sim_pcie_gen2x1.json"
    url = f"sqlite:///{store['cwd'] / 'lab.sqlite'}"
    pushed = _run(["busprobe", "store", "push", fixture, "--store", url], cwd=store["cwd"],
                  env=store["env"])
    run_id = pushed.stdout.split()[1]
    _run(["busprobe", "store", "export", run_id, "-o", "back.json", "--store", url],
         cwd=store["cwd"], env=store["env"])
    assert (store["cwd"] / "back.json").read_bytes() == fixture.read_bytes()


@pytest.mark.bench
def test_bench_pip_install_of_the_sim_extra_from_the_index_sweeps_sim_usb2(wheel,
                                                                          tmp_path_factory):
    """The real thing: ``pip install 'busprobe[sim]'`` resolved and downloaded from the
    package index into a fresh venv (minutes), then a sim:usb2 point from outside the
    checkout."""
    from busprobe.sim.usb2.simulator_build import build_usb2_simulator

    build_usb2_simulator("busprobe")
    work = tmp_path_factory.mktemp("from-index")
    venv.create(work / "venv", with_pip=True)
    python = work / "venv" / "bin" / "python"
    _run([python, "-m", "pip", "install", "-q", f"{wheel}[sim]"])
    env = {k: v for k, v in os.environ.items() if k not in _BUILD_VARIABLES}
    env["PATH"] = f"{work / 'venv' / 'bin'}{os.pathsep}/usr/bin:/bin"
    env[ENV_BUILD_DIR] = str(build_root())
    (work / "cwd").mkdir()
    _run(["busprobe", "sweep", "--device", "sim:usb2", "--direction", "in", "--lengths", "4K",
          "--no-progress", "--json", "out.json"], cwd=work / "cwd", env=env)
    result = json.loads((work / "cwd" / "out.json").read_text())
    assert result["complete"] and result["errors"] == 0
