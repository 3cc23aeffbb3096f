"""The SuperSpeed null disk through a real kernel's ``uas`` behind a host that primes each stream
pipe once with the Prime Stream ID (``sim:usb3?design=storage&primes=pipe``; docs/DESIGN.md
§6.10, "A host that primes the pipe"): the xHCI USB pass of ``make test`` again, with the disk's
simulated host priming that way (``make bench``: a second boot, 4-5 minutes). Every check of
the SuperSpeed disk holds: BOT, then ``uas`` at 5000M with bulk streams, the block sweep, an
unsupported opcode, a port reset and a READ that times out, which leaves the host refusing
(NoStream) selections of the streams ``uas`` aborted."""

import pytest
from busprobe.sim.vm.usb_pass import SS_STORAGE_SELECTOR, run_usb_pass

from .storage_pass import check_the_superspeed_disk, check_the_superspeed_disk_through_uas
from .test_vm_usb import report

PIPE_PRIMED_DISK = f"{SS_STORAGE_SELECTOR}&primes=pipe"


@pytest.mark.bench
def test_uas_at_5000m_works_behind_a_host_that_primes_the_pipe():
    usb_pass = run_usb_pass("xhci", ss_storage_selector=PIPE_PRIMED_DISK,
                            run="usb-xhci-pipe-primes")
    report(usb_pass, usb_pass.boot.marks)
    assert "checks-done" in usb_pass.boot.marks, f"see {usb_pass.boot.console}"
    log = (usb_pass.out / "exporter-ss-storage.log").read_text()
    assert f"serving {PIPE_PRIMED_DISK} " in log.splitlines()[0], log.splitlines()[:1]
    check_the_superspeed_disk(usb_pass)
    check_the_superspeed_disk_through_uas(usb_pass)
