"""Package map: one distribution, three source roots (see pyproject.toml)."""

from setuptools import find_packages, setup

ROOTS = {"busprobe": "host/busprobe", "busprobe.gateware": "gateware", "busprobe.sim": "sim"}


def _packages() -> list[str]:
    packages = []
    for name, where in ROOTS.items():
        packages.append(name)
        packages += [f"{name}.{sub}" for sub in find_packages(where, exclude=["tests", "tests.*"])]
    return packages


setup(packages=_packages(), package_dir=ROOTS)
