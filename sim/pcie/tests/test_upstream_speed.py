""":mod:`busprobe.sim.pcie.upstream_speed`: importing the PCIe benches changes nothing in
cocotbext-pcie; :func:`~busprobe.sim.pcie.upstream_speed.install` rebinds exactly the names it
lists, each to a subclass of what it named (``First`` to busprobe's ``first``).

Each check runs in a fresh interpreter: this one may already have imported or installed them.
"""

from __future__ import annotations

import subprocess
import sys

_SNAPSHOT = '''
import importlib, pkgutil
import cocotbext.pcie.core as core

def snapshot():
    state = {}
    for info in pkgutil.walk_packages(core.__path__, core.__name__ + "."):
        module = importlib.import_module(info.name)
        for name, value in list(vars(module).items()):
            state[(info.name, name)] = value  # the names each module holds
            if isinstance(value, type) and value.__module__ == info.name:  # its own classes
                for attr, member in list(vars(value).items()):
                    state[(info.name, value.__qualname__, attr)] = member
    return state
'''


def _run(code: str) -> None:
    result = subprocess.run([sys.executable, "-c", _SNAPSHOT + code], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_importing_the_benches_changes_nothing_in_cocotbext_pcie():
    _run('''
import cocotb.triggers
from cocotbext.pcie.core import port
before = snapshot()
import busprobe.sim.pcie.testbench, busprobe.sim.pcie.multi_top, busprobe.sim.pcie.server
import busprobe.sim.pcie.chipset, busprobe.sim.pcie.route_speed, busprobe.sim.pcie.port_speed
import busprobe.sim.pcie.tlp_speed, busprobe.sim.pcie.upstream_speed, busprobe.sim.pcie.hostile
after = snapshot()
changed = sorted(str(key) for key in before if after.get(key) is not before[key])
assert not changed, changed
assert port.First is cocotb.triggers.First
''')


def test_install_rebinds_the_names_it_lists_and_nothing_else():
    _run('''
from busprobe.sim.pcie import port_speed
from busprobe.sim.pcie.upstream_speed import install, replacements
before = snapshot()
install()
install()  # idempotent
after = snapshot()
listed = {(module.__name__, name): new for module, name, new in replacements()}
changed = {key for key in before if after.get(key) is not before[key]}
assert changed == set(listed), (changed, set(listed))
for key, new in listed.items():
    assert after[key] is new
    if key[1] == "First":
        assert new is port_speed.first
    else:
        assert isinstance(new, type) and issubclass(new, before[key]) and new is not before[key]
''')
