"""Package map: one distribution, three source roots plus the board constraints
(see pyproject.toml).

``constraints/`` stays at the top of the source tree (board data, not code) and is installed as
``busprobe.gateware.constraints``, and ``firmware/`` (the PCIe SoC's C sources, built on demand)
as ``busprobe.firmware``: an explicit package mapping works for wheels and editable
installs alike, where a path computed from ``__file__`` would point outside an installed package.
Its ``*.toml`` files travel as package data (``[tool.setuptools.package-data]``).
"""

from setuptools import find_packages, setup

ROOTS = {"busprobe": "host/busprobe", "busprobe.gateware": "gateware", "busprobe.sim": "sim"}
#: Single-folder packages mapped from elsewhere in the tree (no subpackages).
EXTRA = {"busprobe.gateware.constraints": "constraints", "busprobe.firmware": "firmware"}


def _packages() -> list[str]:
    packages = []
    for name, where in ROOTS.items():
        packages.append(name)
        packages += [f"{name}.{sub}" for sub in find_packages(where, exclude=["tests", "tests.*"])]
    return packages + list(EXTRA)


setup(packages=_packages(), package_dir={**ROOTS, **EXTRA})
