"""The build directory: the variable wins, then the XDG cache, then ~/.cache; never the sources."""

from busprobe.build_cache import build_root


def test_busprobe_build_dir_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("BUSPROBE_BUILD_DIR", str(tmp_path / "b"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert build_root() == tmp_path / "b"


def test_xdg_cache_home_without_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv("BUSPROBE_BUILD_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert build_root() == tmp_path / "xdg" / "busprobe"


def test_home_cache_when_xdg_is_unset_or_relative(monkeypatch, tmp_path):
    monkeypatch.delenv("BUSPROBE_BUILD_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert build_root() == tmp_path / ".cache" / "busprobe"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # invalid per the XDG spec: ignored
    assert build_root() == tmp_path / ".cache" / "busprobe"

