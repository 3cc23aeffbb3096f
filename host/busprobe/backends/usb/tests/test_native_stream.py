"""The queued stream in native code (``native/usb_stream.c``) against the zero-latency libusb
(``native/null_libusb.c``): the same outcome as the Python loop, and the same failures.

Both libraries are compiled by the tests as a user's first sweep compiles them (the build
directory caches them); without a C compiler these tests skip, as the tool then runs the Python
loop.
"""

import _thread
import ctypes
import signal
import threading
import time

import pytest
from busprobe.backends.usb.libusb import libusb_library_path
from busprobe.backends.usb.native import NativeUnavailable, build
from busprobe.backends.usb.native_stream import NativeStream, StreamFailure
from busprobe.backends.usb.plans import QueuedStream
from busprobe.transport import EndpointStalled, TransferTimeout

STALL, ERROR = 4, 1  # LIBUSB_TRANSFER_STALL, LIBUSB_TRANSFER_ERROR


@pytest.fixture(scope="module")
def null():
    try:
        library = ctypes.CDLL(str(build("null_libusb", link=libusb_library_path())))
        stream = NativeStream(library)
    except NativeUnavailable as exc:
        pytest.skip(f"no native code here: {exc}")
    yield library, stream
    assert library.bp_null_pending() == 0  # nothing left in flight by any test


def run(stream, plan, silence=2.0):
    return stream.run(None, None, plan, silence=silence)


@pytest.mark.parametrize(("length", "count", "depth"), [(512, 1, 1), (4096, 100, 8),
                                                        (1000, 37, 4), (65536, 5, 8)])
def test_every_transfer_completes_once_and_the_window_runs_first_submission_to_last(
        null, length, count, depth):
    _, stream = null
    plan = QueuedStream(0x81, length, count, depth, what="in")
    before = time.perf_counter()
    start, end = run(stream, plan)
    assert before <= start <= end <= time.perf_counter()
    assert (plan.completed_count, plan.moved, plan.short) == (count, count * length, 0)
    chunks = []
    plan.deliver(chunks.append)
    assert [len(c) for c in chunks] == [length] * count


def test_out_data_goes_out_as_given(null):
    _, stream = null
    outgoing = [bytes([i]) * 700 for i in range(9)]
    plan = QueuedStream(0x01, 700, 9, 3, outgoing=outgoing, what="out")
    run(stream, plan)
    assert (plan.completed_count, plan.moved) == (9, 6300)


def test_a_short_completion_is_counted_and_delivered_short(null):
    library, stream = null
    library.bp_null_fault(2, 0, 100)  # the third transfer moves 100 of its 1000 bytes
    plan = QueuedStream(0x81, 1000, 6, 2, what="in")
    run(stream, plan)
    chunks = []
    plan.deliver(chunks.append)
    assert [len(c) for c in chunks] == [1000, 1000, 100, 1000, 1000, 1000]
    assert (plan.moved, plan.short) == (5100, 1)


def test_a_stall_ends_the_stream_as_the_python_loop_does(null):
    library, stream = null
    library.bp_null_fault(3, STALL, 0)
    with pytest.raises(EndpointStalled, match="stalled"):
        run(stream, QueuedStream(0x81, 512, 20, 4, what="in"))


def test_a_failed_transfer_and_a_refused_submission_carry_libusb_s_code(null):
    library, stream = null
    library.bp_null_fault(5, ERROR, 0)
    with pytest.raises(StreamFailure) as failed:
        run(stream, QueuedStream(0x81, 512, 20, 4, what="in"))
    assert failed.value.status == ERROR
    library.bp_null_refuse(6, -4)  # LIBUSB_ERROR_NO_DEVICE
    with pytest.raises(StreamFailure) as refused:
        run(stream, QueuedStream(0x81, 512, 20, 4, what="in"))
    assert refused.value.error == -4


def test_a_lost_completion_times_out_on_silence_and_cancels_the_rest(null):
    library, stream = null
    library.bp_null_fault(2, -1, 0)  # never completes
    begun = time.monotonic()
    with pytest.raises(TransferTimeout, match="none completed within 0.3 s"):
        run(stream, QueuedStream(0x81, 512, 10, 1, what="in"), silence=0.3)
    assert time.monotonic() - begun < 2
    assert library.bp_null_pending() == 0


def test_ctrl_c_stops_the_native_loop_within_a_fraction_of_a_second(null):
    library, stream = null
    # interrupt_main does nothing while SIGINT is ignored, and a CLI test run earlier in this
    # worker may have left it so (busprobe.signals ignores a second Ctrl-C once interrupted).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler) or signal.SIG_DFL
    library.bp_null_fault(1, -1, 0)
    threading.Timer(0.3, _thread.interrupt_main).start()
    begun = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        try:
            run(stream, QueuedStream(0x81, 512, 10, 4, what="in"), silence=30.0)
        finally:
            signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - begun < 1.5
    assert library.bp_null_pending() == 0
