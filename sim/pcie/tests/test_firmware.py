"""The PCIe SoC's firmware in the simulated SoC: boot, console, device-run DMA, and the verdict
that sets the device-run beside the host-run (docs/DESIGN.md §3.2).

Everything goes through the command line, as a user runs it: ``busprobe console --device
sim:pcie`` and ``busprobe sweep``; the firmware is the image the board's ROM gets.
"""

from __future__ import annotations

import json
import os
import re
import select
import threading
import tty

import pytest
from busprobe.cli import main
from busprobe.model.ceiling import ceiling_for
from busprobe.protocol import pcie_soc
from busprobe.results import ceilings_of
from busprobe.targets import open_transport
from busprobe.transport import BusDescription


def console(capfd, *lines, device="sim:pcie"):
    args = ["console", "--device", device]
    for line in lines:
        args += ["-c", line]
    status = main(args)
    out, err = capfd.readouterr()
    assert status == 0, err
    return out


def answers(transcript):
    """``{command: answer}`` from a console transcript (the prompt line, then its answer)."""
    out, command = {}, None
    for line in transcript.splitlines():
        if line.startswith(pcie_soc.PROMPT):
            command = line[len(pcie_soc.PROMPT):]
            out[command] = []
        elif command is not None:
            out[command].append(line)
    return {key: "\n".join(value) for key, value in out.items()}


def link_model(direction, mps=256, mrrs=512):
    bus = BusDescription(kind="pcie", speed="gen2", width=1, mps=mps, mrrs=mrrs,
                         extra={"skp": False, "ack_every": 1, "updatefc_every": 1,
                                "split_at_rcb": False})
    return ceiling_for(bus, direction).throughput


@pytest.mark.sim
def test_firmware_boots_to_a_console_that_shows_the_trained_link_and_runs_dma(capfd):
    transcript = console(capfd, "help", "link", "dma write 64K", "dma read 16K", "counters",
                         "bogus", "dma 12x", "link now")
    banner = transcript.splitlines()[0]
    # What the link was doing when the firmware started depends on who came first, as on a
    # board; `link` below says what it did.
    assert banner.startswith(f"{pcie_soc.BANNER} {pcie_soc.FIRMWARE_VERSION} (protocol 3, "
                             "vexriscv minimal, 125 MHz): link ")
    said = answers(transcript)
    assert "dma [write|read|both]" in said["help"]
    # The link after training and enumeration: its state now, then every change since reset.
    link = said["link"].splitlines()
    assert link[0].startswith("link: up, L0, 5.0 GT/s x1, MPS 256 B, MRRS 512 B")
    history = [line.split("  ", 2)[-1] for line in link[2:]]
    assert history[0] == "down, Detect.Quiet, 2.5 GT/s x1, MPS 128 B, MRRS 512 B"
    assert "up, L0, 2.5 GT/s x1, MPS 128 B, MRRS 512 B" in history  # trained at Gen1 ...
    assert "up, Recovery.Speed0, 5.0 GT/s x1, MPS 128 B, MRRS 512 B" in history  # ... then Gen2
    assert history[-1] == "up, L0, 5.0 GT/s x1, MPS 256 B, MRRS 512 B"  # MPS set by the host
    times = [float(line.split()[0]) for line in link[2:]]
    assert times == sorted(times) and link[1] == f"history: {len(times)} changes since reset"
    # One device-run point each way: every byte checked, device-timed at the link's model.
    for command, direction in (("dma write 64K", "write"), ("dma read 16K", "read")):
        match = re.fullmatch(r"(\w+) +(\d+) B x (\d+) +(\d+) B in +[\d.]+ us = +([\d.]+) MB/s, "
                             r"(\d+) errors", said[command])
        assert match, said[command]
        assert match[1] == direction and match[6] == "0"
        assert int(match[4]) == int(match[2]) * int(match[3]) == 64 << 10
        assert float(match[5]) * 1e6 == pytest.approx(link_model(direction), rel=0.03)
    assert "pattern_errors     0" in said["counters"]
    # Bad input: one line each, and the console goes on.
    assert said["bogus"] == "unknown command 'bogus': try help"
    assert said["dma 12x"] == "dma: bad length '12x' (bytes, K or M: e.g. 64K)"
    assert said["link now"] == "link: takes no arguments"


@pytest.mark.sim
def test_firmware_device_run_stays_at_the_link_model_behind_a_slow_host_driver(capfd):
    """A host whose driver path answers each MSI 20 us late: run by the host, one transfer at a
    time, the plateau drops; run by the device it does not, and the verdict names the driver."""
    status = main(["sweep", "--device", "sim:pcie?driver_latency_ns=20000", "--direction",
                   "write", "--lengths", "16K", "--queue-depth", "1", "--no-progress",
                   "--json", "-"])
    out, err = capfd.readouterr()
    assert status == 0, err
    result = json.loads(out)
    (point,) = result["points"]
    model = link_model("write")
    assert point["errors"] == 0
    assert point["device_run_throughput"] == pytest.approx(model, rel=0.02)
    assert point["throughput"] < 0.8 * model
    (ceiling,) = ceilings_of(result)
    assert ceiling["verdict"] == "driver-limited", ceiling["explanation"]
    assert "host's software path" in ceiling["explanation"]
    with capfd.disabled():
        print(f"\nslow driver: host-run {point['throughput'] / 1e6:.1f} MB/s, device-run "
              f"{point['device_run_throughput'] / 1e6:.1f} MB/s, model {model / 1e6:.1f}: "
              f"{ceiling['verdict']}")


@pytest.mark.sim
def test_firmware_console_over_a_serial_port(capfd):
    """``busprobe console --serial``: termios, a raw tty, the same firmware. The simulated SoC's
    UART is relayed to a pseudo-terminal, which the command opens as a board's serial port."""
    transport = open_transport("sim:pcie")
    transport.open()
    master, slave = os.openpty()
    tty.setraw(slave)  # no echo of the relayed output back into the firmware before it opens
    stop = threading.Event()

    def relay():
        console = transport.platform.console()
        while not stop.is_set():
            if select.select([master], [], [], 0)[0]:
                console.write(os.read(master, 4096))
            printed, _ = console.read_until(b"\0", 20e-6)  # 20 us of simulated time
            if printed:
                os.write(master, printed)

    thread = threading.Thread(target=relay)
    thread.start()
    try:
        status = main(["console", "--serial", os.ttyname(slave), "-c", "link", "-c", "nope"])
        out, err = capfd.readouterr()
    finally:
        stop.set()
        thread.join()
        os.close(master)
        os.close(slave)
        transport.close()
    assert status == 0, err
    said = answers(out)
    assert out.startswith(pcie_soc.BANNER)
    assert said["link"].startswith("link: up, L0, 5.0 GT/s x1, MPS 256 B, MRRS 512 B")
    assert said["nope"] == "unknown command 'nope': try help"
