"""Ctrl-C and its kin (``busprobe.signals``): a signal that arrives inside a ctypes callback is
raised once the callback has returned, not lost in it."""

import signal

import pytest
from busprobe.signals import interruptible, raise_deferred


def test_a_ctrl_c_inside_a_libusb_callback_is_raised_after_it_returns_and_only_once():
    """python-libusb1 runs a transfer's completion callback through ctypes, which drops an
    exception raised in it: the sweep lost its Ctrl-C and hung (the VM's EHCI pass)."""

    def __callbackWrapper() -> str:  # named as python-libusb1's ctypes entry
        signal.raise_signal(signal.SIGINT)
        return "returned"

    with interruptible():
        assert __callbackWrapper() == "returned"  # the callback finished its bookkeeping
        with pytest.raises(KeyboardInterrupt):
            raise_deferred()
        raise_deferred()  # nothing left
        signal.raise_signal(signal.SIGINT)  # a second Ctrl-C: ignored while cleaning up


def test_a_ctrl_c_outside_a_callback_raises_at_once():
    with interruptible(), pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    raise_deferred()  # nothing deferred
