"""``busprobe console``: what it refuses, in one line each, before anything is opened; and the
serial side's errors (the console itself runs against the simulated SoC in
sim/pcie/tests/test_firmware.py)."""

import pytest
from busprobe.backends.pcie.console import SerialConsole
from busprobe.cli import main
from busprobe.transport import DeviceNotFound


@pytest.mark.parametrize(("args", "message"), [
    ([], "busprobe console needs --serial DEV or --device sim:pcie"),
    (["--device", "sim:usb2"], "sim:usb2: the firmware console is the PCIe board's"),
    (["--device", "pcie:0000:01:00.0"],
     "pcie:0000:01:00.0: a board's console is its serial port: add --serial"),
    (["--device", "sim:pcie?gen=9"], "sim:pcie"),
    (["--serial", "/dev/null", "--baud", "12345"], "--baud 12345 is not one of"),
    (["--serial", "/nonexistent/ttyUSB9"], "/nonexistent/ttyUSB9: no such serial port"),
])
def test_console_refuses_bad_arguments_in_one_line(capsys, args, message):
    assert main(["console", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_a_file_that_is_not_a_tty_is_not_a_serial_port(tmp_path):
    path = tmp_path / "plain"
    path.write_text("")
    with pytest.raises(DeviceNotFound, match="not a serial port"):
        SerialConsole(str(path))
