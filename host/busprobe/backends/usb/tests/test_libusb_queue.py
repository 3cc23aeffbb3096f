"""The libusb transfer queue that runs on a board, with the queued-stream plan on it, against a
fake libusb that completes transfers out of order, short, with errors, never, or loses the device
mid-stream."""

import pytest
from busprobe.backends.usb.libusb_queue import LibusbTransferQueue
from busprobe.backends.usb.plans import QueuedStream
from busprobe.backends.usb.transfers import run_plan, silence_for
from busprobe.protocol import usb2
from busprobe.protocol.patterns import PatternStream
from busprobe.transport import DeviceGone, TransferTimeout, TransportError


def run(bus, plan, timeout_ms=None):
    queue = LibusbTransferQueue(bus.usb1, bus.context(), bus.handle(), name="fake")
    silence = timeout_ms / 1000 if timeout_ms else silence_for(plan.length)
    try:
        start, end = run_plan(queue, plan, what=plan.what, silence=silence)
    finally:
        queue.close()
    return plan.result(start, end)


def stream_in(bus, length, count, queue_depth, **kwargs):
    received = []
    plan = QueuedStream(usb2.EP_IN, length, count, queue_depth, what="in transfer")
    result = run(bus, plan, **kwargs)
    plan.deliver(received.append)
    return result, received


def stream_out(bus, outgoing, queue_depth, **kwargs):
    plan = QueuedStream(usb2.EP_OUT, len(outgoing[0]), len(outgoing), queue_depth,
                        outgoing=outgoing, what="out transfer")
    return run(bus, plan, **kwargs)


def nothing_left_submitted(bus):
    return not any(t.submitted for t in bus.transfers) and bus.in_flight == 0


@pytest.mark.parametrize("order", ["fifo", "reverse", "shuffle"])
def test_in_data_reaches_the_sink_in_submission_order_whatever_the_completion_order(order,
                                                                                   fake_bus):
    bus = fake_bus(order=order)
    result, received = stream_in(bus, 1000, 20, 4)
    assert PatternStream().check(b"".join(received)).errors == 0
    assert [len(chunk) for chunk in received] == [1000] * 20
    assert (result.bytes, result.transfers, result.short_transfers) == (20_000, 20, 0)


@pytest.mark.parametrize("queue_depth, count", [(1, 5), (4, 20), (8, 3)])
def test_queue_depth_transfers_are_outstanding_and_exactly_count_are_submitted(queue_depth,
                                                                               count, fake_bus):
    bus = fake_bus()
    stream_in(bus, 512, count, queue_depth)
    assert bus.max_in_flight == min(queue_depth, count)
    assert bus.submits == count
    assert len(bus.transfers) == min(queue_depth, count)  # transfers are reused, not leaked
    assert all(t.closed for t in bus.transfers) and nothing_left_submitted(bus)


@pytest.mark.parametrize("order", ["fifo", "reverse"])
def test_out_buffers_go_out_in_order_and_once_each(order, fake_bus):
    bus = fake_bus(order=order)
    source = PatternStream()
    outgoing = [source.take(700) for _ in range(9)]
    result = stream_out(bus, outgoing, 3)
    assert (bus.checked, bus.pattern_errors) == (6300, 0)
    assert (result.bytes, result.transfers) == (6300, 9)


def test_short_in_completions_are_counted_and_delivered_as_they_are(fake_bus):
    bus = fake_bus(order="reverse", short={2: 100, 5: 0})
    result, received = stream_in(bus, 1000, 8, 4)
    assert [len(chunk) for chunk in received] == [1000, 1000, 100, 1000, 1000, 0, 1000, 1000]
    assert (result.bytes, result.short_transfers) == (6100, 2)
    assert PatternStream().check(b"".join(received)).errors == 0


@pytest.mark.parametrize("status, kind, text", [
    ("TRANSFER_STALL", TransportError, "stalled"),
    ("TRANSFER_ERROR", TransportError, "transfer failed"),
    ("TRANSFER_TIMED_OUT", TransferTimeout, "timed out"),
    ("TRANSFER_NO_DEVICE", DeviceGone, "gone"),
    ("TRANSFER_OVERFLOW", TransportError, "overflow"),
])
def test_a_failed_completion_raises_its_error_and_cancels_the_rest(status, kind, text,
                                                                  fake_bus):
    bus = fake_bus(status={5: status})
    with pytest.raises(kind, match=text) as info:
        stream_in(bus, 512, 20, 4)
    assert "\n" not in str(info.value)
    assert nothing_left_submitted(bus) and bus.submits < 20


def test_the_device_vanishing_on_resubmission_is_device_gone(fake_bus):
    bus = fake_bus(gone_on_submit=6)
    with pytest.raises(DeviceGone, match="in transfer: the device is gone"):
        stream_in(bus, 512, 20, 4)
    assert nothing_left_submitted(bus)


def test_a_completion_that_never_comes_times_out_instead_of_hanging(fake_bus):
    bus = fake_bus(lost={3})
    with pytest.raises(TransferTimeout, match="timed out: 1 transfer.s. in flight, none "
                                              "completed within 0.1 s"):
        stream_in(bus, 512, 10, 4, timeout_ms=100)
    assert nothing_left_submitted(bus)  # the lost one was cancelled


def test_out_buffers_must_match_the_count(fake_bus):
    with pytest.raises(ValueError, match="2 OUT buffers for 3 transfers"):
        QueuedStream(usb2.EP_OUT, 4, 3, 1, outgoing=[b"abcd"] * 2, what="x")


def test_a_python_libusb1_without_its_raw_pointers_is_said_once_and_streams_in_python(
        fake_bus, caplog, monkeypatch):
    """The native stream reads python-libusb1's private raw pointers; where they are missing (the
    fake bus has none, as another release of python-libusb1 may not) the stream still runs, in
    the Python loop, and a warning says so once per process, not once per stream."""
    from busprobe.backends.usb import libusb_queue

    monkeypatch.setattr(libusb_queue, "_said_no_raw_pointers", False)
    bus = fake_bus()
    with caplog.at_level("WARNING", logger=libusb_queue.__name__):
        first, _ = stream_in(bus, 512, 4, 2)
        second, _ = stream_in(bus, 512, 4, 2)
    said = [r.getMessage() for r in caplog.records if r.name == libusb_queue.__name__]
    assert len(said) == 1 and "_USBContext__context_p" in said[0], said
    assert first.bytes == second.bytes == 2048
