"""``busprobe topology``: every hop from the root of the bus to the device, link caps vs status."""

from __future__ import annotations

import argparse
import json

from .. import buses, targets
from ..result_file import check_writable, is_stdout, write_result
from ..topology.hop import format_hops

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("topology", help="each hop root -> device with link caps and status",
                            description=__doc__)
    parser.add_argument("--device", required=True, metavar="SEL",
                        help=buses.selector_syntax())
    parser.add_argument("--json", nargs="?", const="-", metavar="FILE",
                        help="the hops as JSON, to FILE or (no FILE, or '-') to stdout")
    parser.add_argument("--sysfs-root", default="/sys",
                        help="read this tree instead of /sys (fixtures, other machines' dumps)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_writable(args.json)
    hops = targets.describe(args.device, sysfs_root=args.sysfs_root).hops_json()
    if args.json:
        write_result(args.json, json.dumps(hops, indent=1) + "\n")
    if not is_stdout(args.json):
        print(format_hops(hops))
    return 0
