"""The contract's C header compiles and says what the Python contract says."""

import shutil
import subprocess

import pytest
from busprobe.protocol import c_header, pcie, usb2


def test_every_definition_is_a_unique_macro_of_the_contracts_value():
    names = [name for name, _, _ in c_header.definitions()]
    assert len(names) == len(set(names))
    values = {name: value for name, value, _ in c_header.definitions()}
    assert values["PCIE_CSR_BUSPROBE_MAGIC"] == pcie.csr("busprobe_magic")
    assert values["USB_REQUEST_GET_TELEMETRY"] == usb2.Request.GET_TELEMETRY
    assert values["USB2_TELEMETRY_IN_BYTES"] == [n for n, _ in usb2.TELEMETRY].index("in_bytes")


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler")
def test_the_header_compiles_and_a_c_program_reads_the_same_numbers(tmp_path):
    (tmp_path / "busprobe_protocol.h").write_text(c_header.render())
    checks = "\n".join(f"_Static_assert(BUSPROBE_{name} == {value:#x}u, \"{name}\");"
                       for name, value, _ in c_header.definitions())
    (tmp_path / "check.c").write_text(f'#include "busprobe_protocol.h"\n{checks}\n'
                                      "int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", "-c", "check.c", "-o", "check.o"],
                   cwd=tmp_path, check=True)


def test_the_command_writes_the_header(tmp_path):
    out = tmp_path / "h.h"
    assert c_header.main([str(out)]) == 0
    assert out.read_text() == c_header.render()
