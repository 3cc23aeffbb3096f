"""busprobe: measure how fast a USB or PCIe link really is, and say why it is not faster."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("busprobe")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+src"

__all__ = ["__version__"]
