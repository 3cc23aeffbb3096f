"""One QEMU guest: the command line, the boot, and the serial console read line by line.

The machine is TCG-emulated (``-accel tcg``; this machine's KVM cannot run a stock kernel) with
one vCPU (faster than two on two host cores), ``-cpu max`` (the host's Python and numpy use
instructions QEMU's default CPU model lacks: "Illegal instruction"), no default devices, the
host's root filesystem shared read-only over 9p and a writable 9p share for results. The kernel
logs at warning level, so the console carries the guest script's lines; its own messages are
read from ``dmesg`` there.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .bytecode import compile_busprobe
from .initramfs import MARK
from .kernel import VmUnavailable

__all__ = ["Machine", "Boot", "boot", "QEMU"]

QEMU = "qemu-system-x86_64"


@dataclass
class Machine:
    """A guest to boot.

    Parameters
    ----------
    kernel, initramfs : Path
        What to boot (:mod:`.kernel`, :mod:`.initramfs`).
    script : Path
        The guest script (run by ``/init`` with ``out`` as its argument).
    out : Path
        The run's output folder, shared writable at the same path.
    devices : list of str
        Extra QEMU arguments (controllers, usb-redir, PCIe endpoints, ...).
    machine : str
        ``-machine`` (``pc``; ``q35`` for PCI Express with an IOMMU).
    memory_mb : int
        Guest memory.
    """

    kernel: Path
    initramfs: Path
    script: Path
    out: Path
    devices: list[str] = field(default_factory=list)
    machine: str = "pc"
    memory_mb: int = 1024
    kernel_args: str = ""

    def argv(self) -> list[str]:
        append = (f"console=ttyS0 loglevel=4 panic=-1 bp_script={self.script} "
                  f"bp_out={self.out} {self.kernel_args}").strip()
        return [QEMU, "-accel", "tcg", "-cpu", "max", "-smp", "1", "-m", str(self.memory_mb),
                "-machine", self.machine, "-nodefaults", "-no-reboot", "-display", "none",
                "-serial", "stdio", "-monitor", "none",
                "-kernel", str(self.kernel), "-initrd", str(self.initramfs), "-append", append,
                "-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on,"
                          "multidevs=remap",
                "-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
                "-fsdev", f"local,id=results,path={self.out},security_model=none",
                "-device", "virtio-9p-pci,fsdev=results,mount_tag=results",
                *self.devices]


@dataclass
class Boot:
    """What one boot showed: the guest's marker lines (without the prefix), in order, each with
    the wall seconds since QEMU started at which it arrived (``at``)."""

    marks: list[str]
    console: Path
    seconds: float
    ready_seconds: float | None
    returncode: int | None
    at: list[float] = field(default_factory=list)

    def find(self, prefix: str) -> list[str]:
        return [line for line in self.marks if line.startswith(prefix)]

    def slowest(self, count: int = 8) -> list[tuple[float, str]]:
        """The ``count`` longest gaps between a mark and the one before it (the boot's start
        before the first): ``(seconds, mark that ended the gap)``, longest first. Where a VM
        pass spends its wall time, printed beside its marks."""
        gaps = [(now - before, mark) for before, now, mark
                in zip([0.0, *self.at[:-1]], self.at, self.marks, strict=True)]
        return sorted(gaps, reverse=True)[:count]

    def time_line(self, count: int = 8) -> str:
        """One line for the log: the :meth:`slowest` gaps, each as ``seconds before mark``."""
        return "slowest steps: " + "; ".join(f"{gap:.0f} s before '{mark[:50]}'"
                                             for gap, mark in self.slowest(count))


def boot(machine: Machine, *, timeout: float, console: Path,
         on_mark: Callable[[str], None] = lambda line: None) -> Boot:
    """Boot ``machine`` and wait until it powers off (or ``timeout`` wall seconds pass, then
    kill it). ``on_mark`` sees every marker line as it arrives (the harness acts on some)."""
    if shutil.which(QEMU) is None:
        raise VmUnavailable(f"{QEMU} is missing: apt-get install qemu-system-x86")
    machine.out.mkdir(parents=True, exist_ok=True)
    compile_busprobe()
    marks: list[str] = []
    at: list[float] = []
    started = time.monotonic()
    with open(console, "w") as log:
        proc = subprocess.Popen(machine.argv(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        def read() -> None:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = raw.decode(errors="replace").rstrip("\r\n")
                log.write(line + "\n")
                log.flush()
                if line.startswith(MARK + " "):
                    text = line[len(MARK) + 1:]
                    marks.append(text)
                    at.append(time.monotonic() - started)
                    on_mark(text)

        reader = threading.Thread(target=read, name="qemu-console", daemon=True)
        reader.start()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            marks.append(f"timeout after {timeout:.0f} s")
            at.append(time.monotonic() - started)
        finally:  # interrupted (Ctrl-C on pytest): no guest outlives the harness
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reader.join(10)
    ready = next((when for mark, when in zip(marks, at, strict=True) if mark == "init-ready"),
                 None)
    return Boot(marks, console, time.monotonic() - started, ready, proc.returncode, at)

