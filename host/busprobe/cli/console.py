"""``busprobe console``: the PCIe board's firmware console (the SoC's UART).

Over a serial port (``--serial /dev/ttyUSB0``, the board's USB-UART at 115200 8N1), or with
``--device sim:pcie[?...]`` to the simulated SoC running the same firmware. With ``--device``
the tool also opens the device as a sweep does and allocates and pins one DMA buffer, which the
firmware's ``dma`` command runs through (``--device pcie:BDF --serial ...`` on a board, where
the console itself is the serial port). Each ``--command`` (``-c``) is typed in turn and
answered; without one, lines are read from standard input until it ends.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from typing import Any

from .. import buses, targets
from ..backends.pcie.console import Console, SerialConsole, read_banner, run_command
from ..protocol import pcie_soc
from ..transport import InvalidRequest

__all__ = ["register", "run"]

#: The buffer ``--device`` publishes for the console's ``dma`` (volume of its points).
CONSOLE_BUFFER = 64 << 10


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("console", help="the PCIe board's firmware console (serial or sim)",
                            description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serial", metavar="DEV", help="the board's serial port")
    parser.add_argument("--baud", type=int, default=pcie_soc.UART_BAUD,
                        help=f"serial line rate (default {pcie_soc.UART_BAUD})")
    parser.add_argument("--device", metavar="SEL",
                        help=f"sim:pcie[?{buses.PCIE.sim_syntax}] (the simulated SoC), or "
                             f"{buses.PCIE.real_syntax} with --serial: open it and publish a DMA "
                             "buffer for the console's dma command")
    parser.add_argument("-c", "--command", action="append", default=[], metavar="LINE",
                        help="a console line to run (repeatable); none: read standard input")
    parser.add_argument("--buffer", default="64K", metavar="SIZE",
                        help="size of the DMA buffer --device publishes (default 64K)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..lengths import parse_size

    buffer = parse_size(args.buffer)
    if args.serial is None and args.device is None:
        raise ValueError("busprobe console needs --serial DEV or --device sim:pcie")
    target = targets.describe(args.device, sysfs_root=None) if args.device else None
    if target is not None and target.spec is not buses.PCIE:
        raise ValueError(f"{args.device}: the firmware console is the PCIe board's")
    if target is not None and not target.simulated and args.serial is None:
        raise ValueError(f"{args.device}: a board's console is its serial port: add --serial")
    with ExitStack() as stack:
        console: Console
        if target is not None:
            transport: Any = targets.open_transport(target)
            transport.device_run_bytes = buffer
            transport.open()
            stack.callback(transport.close)
            if transport.device is None:
                raise InvalidRequest(f"{args.device}: the SoC's firmware does not answer "
                                     "its mailbox")
        if args.serial is not None:
            serial = SerialConsole(args.serial, args.baud)
            stack.callback(serial.close)
            console = serial
        else:
            console = transport.platform.console()
        print(read_banner(console), flush=True)
        lines = args.command or (line.rstrip("\n") for line in sys.stdin)
        for line in lines:
            print(f"{pcie_soc.PROMPT}{line}", flush=True)
            answer = run_command(console, line)
            if answer:
                print(answer, flush=True)
    return 0
