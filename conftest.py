"""Test-run set-up shared by every test folder.

Builds (generated Verilog, Verilator simulators, bitstreams) go to the checkout's ``build/`` unless
``BUSPROBE_BUILD_DIR`` already says otherwise, as under ``make``: a test run, ``make demo`` and
``make bench`` then share one cache, and ``make clean`` removes it. An installed busprobe uses the
user cache directory instead (:mod:`busprobe.build_cache`).
"""

import os
from pathlib import Path

os.environ.setdefault("BUSPROBE_BUILD_DIR", str(Path(__file__).resolve().parent / "build"))
