"""Byte-compile busprobe's own sources before a guest boots.

Under QEMU's TCG a Python start-up is ten to twenty times slower than on the host, and the guest
starts ``busprobe`` a dozen times a pass. Its site-packages came compiled from pip, but an
editable checkout's sources do not, and where ``PYTHONDONTWRITEBYTECODE`` is set (it is on the
machines this project is tested on) every process compiled every module it imported, each time.
:mod:`py_compile` writes the ``__pycache__`` files whatever that variable says; the guest reads
them over its read-only 9p view of the host's tree (they are valid there: same source, same
mtime).
"""

from __future__ import annotations

import compileall
from importlib.util import find_spec
from pathlib import Path

__all__ = ["compile_busprobe"]


def compile_busprobe() -> list[Path]:
    """Compile every source folder of the ``busprobe`` package and its mapped subpackages (the
    checkout's ``host/busprobe``, ``sim``, ``gateware``); return the folders. Up to date files
    are skipped, so a second call costs a stat a file."""
    folders = []
    for package in ("busprobe", "busprobe.sim", "busprobe.gateware"):
        spec = find_spec(package)
        assert spec is not None and spec.submodule_search_locations is not None, package
        folders += [Path(p) for p in spec.submodule_search_locations]
    for folder in folders:
        if not compileall.compile_dir(folder, quiet=1, workers=1):
            raise RuntimeError(f"byte-compiling {folder} failed")
    return folders
