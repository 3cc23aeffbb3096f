"""``busprobe fit RESULT.json -o myhost.toml``: a USB 2.0 host profile fitted from a sweep.

Estimates every parameter the model and the simulated host controller use (bulk packets per
microframe per direction, completion granularity, completion and resubmit latency,
inter-transaction gap) by least squares of the model's figures against the sweep's points and
the device's telemetry, each with its uncertainty; writes them as a host-profile TOML whose
sources say where they came from; says which parameters the sweep could not pin down and which
extra lengths or queue depths would. Replay the profile with ``sim:usb2?host=myhost.toml``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..fit.fitted import fit_sweep
from ..fit.profile_toml import write_profile
from ..fit.report import format_fit
from ..result_file import check_writable, is_stdout

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("fit", help="fit a USB 2.0 host profile to a sweep",
                            description=__doc__)
    parser.add_argument("result", metavar="RESULT.json",
                        help="a USB 2.0 result written by busprobe sweep --json: a length ladder "
                             "at queue depth 1 and at 4 or more, with no errors")
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
    fitted = fit_sweep(args.result)
    write_profile(fitted, args.output, name)
    human = sys.stderr if to_stdout else sys.stdout
    print(format_fit(fitted, seconds=time.monotonic() - started), file=human)
    if to_stdout:
        print(f"profile: written to stdout (name {name!r}); save it as NAME.toml to replay it "
              "with --device \"sim:usb2?host=NAME.toml\"", file=human)
    else:
        print(f"profile: {output} (name {name!r}); replay it with "
              f"--device \"sim:usb2?host={output}\"", file=human)
    return 0
