"""The contract as a C header, for firmware: generated from this package, never written by hand.

``python -m busprobe.protocol.c_header OUT.h`` writes ``#define`` s for everything a program on
the device side (the PCIe board's soft CPU, a test tool) needs: identities, the PCIe BAR0 / CSR
offsets (LiteX's export, :data:`~busprobe.protocol.pcie.CSRS`), the DMA descriptor and status
bits, the data patterns, and the USB vendor requests, data modes and telemetry word indices; for
the PCIe SoC's firmware (``firmware/``) the CPU's memory map (LiteX's export), the link state
word, the mailbox's commands and the console's prompt. Names are ``BUSPROBE_<PART>_<NAME>`` in
upper case. With ``BUSPROBE_PROTOCOL_TABLES`` defined before it is included (in one C file), the
header also defines the LTSSM state names and the PCIe telemetry counters' names and offsets.
"""

from __future__ import annotations

import argparse
import enum
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from . import patterns, pcie, pcie_soc, usb2, usb3

__all__ = ["render", "definitions", "main"]

_GUARD = "BUSPROBE_PROTOCOL_H"


def _name(*parts: str) -> str:
    return "_".join(re.sub(r"[^0-9A-Za-z]+", "_", part).upper() for part in parts)


def _enum(part: str, members: Iterable[enum.Enum]) -> list[tuple[str, int, str]]:
    return [(_name(part, member.name), int(member.value), "") for member in members]


def definitions() -> list[tuple[str, int, str]]:
    """``(macro, value, comment)`` for every definition of the header, in order."""
    out: list[tuple[str, int, str]] = []
    for name in ("VENDOR_ID", "DEVICE_ID", "MAGIC", "PROTOCOL_VERSION", "CLOCK_HZ", "BAR0_SIZE",
                 "DATA_WIDTH", "READ_TAGS", "DMA_TABLE_DEPTH", "DMA_LENGTH_ALIGN",
                 "DMA_ADDRESS_ALIGN", "DESC_MAX_LENGTH", "DESC_LENGTH_MASK", "DESC_IRQ_DISABLE",
                 "DESC_LAST_DISABLE", "DMA_ENABLE", "DMA_IDLE", "MSI_READER", "MSI_WRITER",
                 "MAX_PAYLOAD_SIZE", "MAX_READ_REQUEST_SIZE", "RD_FAILED", "RD_RESET_PENDING"):
        out.append((_name("PCIE", name), int(getattr(pcie, name)), ""))
    out += [(_name("PCIE_CSR", name), offset, "BAR0 byte offset")
            for name, offset in pcie.CSRS.items()]
    out += _enum("PATTERN", patterns.Pattern)
    out.append((_name("NO_ERROR_OFFSET"), patterns.NO_ERROR_OFFSET, ""))
    for part, protocol in (("USB2", usb2), ("USB3", usb3)):
        for name in ("MAGIC", "PROTOCOL_VERSION", "EP_IN", "EP_OUT", "MAX_PACKET_SIZE",
                     "CLOCK_HZ", "TELEMETRY_WORDS", "TELEMETRY_SIZE", "INFO_SIZE"):
            out.append((_name(part, name), int(getattr(protocol, name)), ""))
        out += [(_name(part, "TELEMETRY", word), index, "word index")
                for index, (word, _) in enumerate(protocol.TELEMETRY)]
    out += [(_name("USB2", "VID"), usb2.VID, ""), (_name("USB2", "PID"), usb2.PID, "")]
    out += _enum("USB_REQUEST", usb2.Request)
    out += _enum("USB_DATA_MODE", usb2.DataMode)
    return out + _soc_definitions()


def _soc_definitions() -> list[tuple[str, int, str]]:
    """The PCIe SoC's: memory regions as LiteX exported them, the link state word's fields,
    the firmware mailbox."""
    out = []
    for region, where in pcie.exported_map()["memories"].items():
        out += [(_name("SOC", region, "BASE"), where["base"], "CPU address"),
                (_name("SOC", region, "SIZE"), where["size"], "")]
    for name in ("UART_BAUD", "LINK_HISTORY_DEPTH", "LTSSM_L0", "FIRMWARE_MAGIC",
                 "FIRMWARE_VERSION", "MSI_FIRMWARE"):
        out.append((_name("SOC", name), int(getattr(pcie_soc, name)), ""))
    for field, lsb, bits, meaning in pcie_soc.LINK_FIELDS:
        out += [(_name("LINK", field, "LSB"), lsb, meaning),
                (_name("LINK", field, "BITS"), bits, "")]
    out += _enum("FW_COMMAND", pcie_soc.Command)
    out += _enum("FW_STATUS", pcie_soc.Status)
    out += _enum("FW_DIRECTION", pcie_soc.Direction)
    return out


def _strings() -> list[str]:
    return [f"#define BUSPROBE_SOC_{name} {json.dumps(getattr(pcie_soc, name))}"
            for name in ("PROMPT", "BANNER", "CPU_TYPE", "CPU_VARIANT")]


def _tables() -> list[str]:
    names = ", ".join(f"[{code:#04x}] = {json.dumps(name)}"
                      for code, name in sorted(pcie_soc.LTSSM_7SERIES.items()))
    def table(names: Iterable[str]) -> str:
        return ",\n    ".join(f"{{{json.dumps(name)}, BUSPROBE_PCIE_CSR_{_name('BUSPROBE', name)}}}"
                              for name in names)
    return ["#ifdef BUSPROBE_PROTOCOL_TABLES",
            "/* LTSSM state names by pl_ltssm_state code (NULL: reserved). */",
            f"const char *const busprobe_ltssm_names[64] = {{{names}}};",
            "/* The PCIe telemetry counters, in the contract's order. */",
            "const struct busprobe_counter busprobe_pcie_telemetry[] = {",
            f"    {table(name for name, _ in pcie.TELEMETRY)}}};",
            "/* The link faults the core counts (LINK_ERRORS), then what they made useless. */",
            "const struct busprobe_counter busprobe_pcie_faults[] = {",
            f"    {table((*pcie.LINK_ERRORS, 'rd_cpl_discarded'))}}};",
            "#endif", ""]


def render() -> str:
    lines = [f"/* {Path(__file__).name}: the busprobe host<->device contract. Generated by",
             " * `python -m busprobe.protocol.c_header`; edit busprobe/protocol/, not this. */",
             f"#ifndef {_GUARD}", f"#define {_GUARD}", ""]
    for macro, value, comment in definitions():
        text = f"#define BUSPROBE_{macro} {value:#x}u"
        lines.append(f"{text:<72} /* {comment} */" if comment else text)
    lines += ["", *_strings(), "",
              "struct busprobe_counter { const char *name; unsigned offset; };",
              "extern const char *const busprobe_ltssm_names[64];",
              "extern const struct busprobe_counter busprobe_pcie_telemetry[];",
              f"#define BUSPROBE_PCIE_TELEMETRY_COUNT {len(pcie.TELEMETRY)}u",
              "extern const struct busprobe_counter busprobe_pcie_faults[];",
              f"#define BUSPROBE_PCIE_FAULTS_COUNT {len(pcie.LINK_ERRORS) + 1}u", "",
              *_tables(), f"#endif /* {_GUARD} */", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write busprobe's contract as a C header.")
    parser.add_argument("out", type=Path, help="the header to write ('-': stdout)")
    args = parser.parse_args(argv)
    text = render()
    if str(args.out) == "-":
        sys.stdout.write(text)
    else:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
