"""``busprobe fit RESULT.json -o myhost.toml``: a host profile fitted from a sweep.

USB 2.0: every parameter the model and the simulated host controller use (bulk packets per
microframe per direction, completion granularity, completion and resubmit latency,
inter-transaction gap); USB 3.0: burst windows per direction, turnaround, re-token delay,
credit return, completion and resubmit latency; PCIe: the root's completion latency, read
completion boundary, upstream cap and posted-write credits. Each by least squares of the run
model against the sweep's points and the device's telemetry, with its uncertainty; written as
a profile TOML whose sources say where they came from; the parameters the sweep could not pin
down are named with what would. Replay: ``sim:usb2?host=P.toml``, ``sim:usb3?host=P.toml``, or
the ``sim:pcie?...`` selector ``fit`` prints.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .. import buses
from ..fit.fitted import fit_sweep
from ..fit.pcie_fit import fit_pcie
from ..fit.profile_toml import write_profile, write_settings
from ..fit.report import format_fit
from ..fit.settings_report import format_settings
from ..fit.usb3_fit import fit_usb3
from ..model.pcie_hosts import load_pcie_profile
from ..model.usb3_hosts import load_usb3_profile
from ..result_file import check_writable, is_stdout
from ..results import load_results

__all__ = ["register", "run", "FitRequest", "fit_usb2_profile", "fit_usb3_profile",
           "fit_pcie_profile"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("fit", help="fit a host profile to a sweep (USB 2.0, USB 3.0, PCIe)",
                            description=__doc__)
    parser.add_argument("result", metavar="RESULT.json",
                        help="a result written by busprobe sweep --json, with no errors: USB 2.0 "
                             "a length ladder at queue depth 1 and at 4 or more; USB 3.0 and "
                             "PCIe a ladder at queue depth 1 and 2 or more")
    parser.add_argument("-o", "--output", required=True, metavar="PROFILE.toml",
                        help="host profile to write (replay: sim:usb2?host=PROFILE.toml; '-': "
                             "stdout, the report then goes to stderr)")
    parser.add_argument("--name", help="profile name (default: the output file's stem)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    output = Path(args.output)
    to_stdout = is_stdout(args.output)
    # Checked before minutes of fitting: a profile is found by its .toml suffix (a bare name is
    # a built-in profile's), and the name must be one a profile can carry.
    if output.is_dir():
        raise ValueError(f"-o {args.output} is a directory")
    if output.suffix != ".toml" and not to_stdout:
        raise ValueError(f"-o {args.output}: a host profile file ends in .toml "
                         "(sim:usb2?host= reads a bare name as a built-in profile)")
    check_writable(args.output)
    name = args.name if args.name is not None else ("fitted" if to_stdout else output.stem)
    if not name or not name.isprintable():
        raise ValueError(f"--name {name!r}: a profile name is a non-empty line of text")
    started = time.monotonic()
    kind = (load_results(args.result).get("bus") or {}).get("kind")
    human = sys.stderr if to_stdout else sys.stdout
    # The result's bus row names its fitter; a result of a bus without one goes to USB 2.0's,
    # whose refusal says what a fit needs.
    row = next((bus for bus in buses.BUSES if bus.kind == kind and bus.fit), buses.USB2_HS)
    return buses.load(row.fit)(FitRequest(args.result, args.output, name, started, human))


@dataclass(frozen=True)
class FitRequest:
    """What a bus row's fitter (:attr:`busprobe.buses.Bus.fit`) is asked.

    Attributes
    ----------
    result : str
        The result file to fit.
    output : str
        The profile file to write (``-``: stdout).
    name : str
        The profile's name.
    started : float
        ``time.monotonic()`` when the command started (the report says how long it took).
    human : TextIO
        Where the report goes (stderr when the profile goes to stdout).
    """

    result: str
    output: str
    name: str
    started: float
    human: TextIO


def fit_usb2_profile(request: FitRequest) -> int:
    """``usb2-hs``: a USB 2.0 host profile (:mod:`busprobe.fit.fitted`)."""
    fitted = fit_sweep(request.result)
    write_profile(fitted, request.output, request.name)
    name, output, human = request.name, request.output, request.human
    print(format_fit(fitted, seconds=time.monotonic() - request.started), file=human)
    if is_stdout(output):
        print(f"profile: written to stdout (name {name!r}); save it as NAME.toml to replay it "
              "with --device \"sim:usb2?host=NAME.toml\"", file=human)
    else:
        print(f"profile: {output} (name {name!r}); replay it with "
              f"--device \"sim:usb2?host={output}\"", file=human)
    return 0


def fit_usb3_profile(request: FitRequest) -> int:
    """``usb3-ss``: a SuperSpeed host profile (:mod:`busprobe.fit.usb3_fit`)."""
    saved = _saved(Path(request.output), is_stdout(request.output))
    return _settings(fit_usb3(request.result), request, load_usb3_profile,
                     f"--device \"sim:usb3?host={saved}\"")


def fit_pcie_profile(request: FitRequest) -> int:
    """``pcie``: a PCIe root profile (:mod:`busprobe.fit.pcie_fit`)."""
    fitted = fit_pcie(request.result)
    return _settings(fitted, request, load_pcie_profile,
                     f"--device \"{fitted.replay_selector(request.name)}\"")


def _saved(output: Path, to_stdout: bool) -> str:
    """Where the replay selector finds the profile: the file, or where stdout is saved."""
    return "NAME.toml" if to_stdout else str(output)


def _settings(fitted: Any, request: FitRequest, loader: Callable[[str], Any],
              replay: str) -> int:
    """Write and report a USB 3.0 or PCIe fit (the report on ``request.human``)."""
    output, name, started, human = request.output, request.name, request.started, request.human
    data = fitted.data
    write_settings(fitted.settings, output, name, result=data.path, points=len(data.points),
                   loader=loader)
    used = len(fitted.fit_points) if hasattr(fitted, "fit_points") else None
    print(format_settings(data, fitted.settings, fitted.fit,
                          seconds=time.monotonic() - started, fitted_points=used), file=human)
    where = "written to stdout" if is_stdout(output) else output
    print(f"profile: {where} (name {name!r}); replay it with {replay}", file=human)
    return 0
