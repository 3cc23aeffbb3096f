"""A fake libusb device for the USB backend's tests: python-libusb1's surface, a busprobe device
behind it, and the faults real host stacks show.

:class:`FakeBus` stands in for what the ``usb1`` module, a ``USBContext``, a device handle and its
transfers do. Bulk data moves in submission order, as a host controller works its queue, but
completions can be handed back in another order, short, with an error status, never (a lost
completion), or the device can vanish (``LIBUSB_ERROR_NO_DEVICE``) at a given transfer. Vendor
requests are answered like the gateware does (GET_INFO, SET_PATTERN, SET_IN_TRANSFER, telemetry),
and the device checks OUT data against the pattern, so end-to-end tests see errors where a
backend bug would cause them. Like the gateware it is built with optional parts
(:class:`~busprobe.protocol.usb2.Feature`, none by default, as the lean ``usb2`` design):
without BOT it STALLs SET_DATA_MODE(BOT), and the counters it leaves out read 0. The real
``usb1`` constants and exception classes are used, so the backend's error mapping is the real one.
"""

from __future__ import annotations

import random
import time
import types
from dataclasses import dataclass, field

import pytest
from busprobe.backends.usb import load_usb1
from busprobe.protocol import bot, usb2
from busprobe.protocol.patterns import Pattern, PatternStream


@dataclass
class Faults:
    """Faults keyed by the 0-based submission index of a bulk transfer."""

    order: str = "fifo"  # fifo | reverse | shuffle: order completions are handed back in
    short: dict[int, int] = field(default_factory=dict)  # index -> bytes actually moved (IN)
    status: dict[int, str] = field(default_factory=dict)  # index -> usb1 TRANSFER_* name
    lost: set[int] = field(default_factory=set)  # completions that never come
    gone_on_submit: int | None = None  # submit() raises USBErrorNoDevice at this index


class FakeBotFramer:
    """The gateware's BOT framer (``gateware/common/bot.py``) in Python: a CBW, its data
    (IN from the pattern source, OUT into the checker), a CSW. ``tamper(csw)`` may change a CSW
    before it is sent, ``refuse`` answers every CBW with a phase error (a device that answers
    wrongly)."""

    def __init__(self, bus: FakeBus) -> None:
        self.bus = bus
        self.command: bot.Cbw | None = None
        self.remaining = 0
        self.csws: list[bot.Csw] = []
        self.tamper = lambda csw: csw
        self.refuse = False  # answer every CBW as a bridge chip answers one it cannot take

    def _close(self, status: int = bot.CswStatus.PASSED) -> None:
        self.csws.append(self.tamper(bot.Csw(self.command.tag, self.remaining, status)))
        self.command = None

    def transfer(self, endpoint: int, buffer: bytearray | bytes) -> int:
        """Bytes the device moves for one bulk transfer (IN: written into ``buffer``)."""
        if not endpoint & 0x80:
            data = bytes(buffer)
            if self.command is None:
                try:
                    if self.refuse:
                        raise ValueError("refused")
                    self.command = bot.Cbw.unpack(data)
                except ValueError:
                    tag, length = (int.from_bytes(data[i:i + 4], "little") for i in (4, 8))
                    self.csws.append(bot.Csw(tag, length, bot.CswStatus.PHASE_ERROR))
                    return len(data)
                self.remaining = self.command.length
                if not self.remaining:
                    self._close()
                return len(data)
            self.bus.check_out(data[:self.remaining])
            self.remaining -= min(len(data), self.remaining)
            if not self.remaining or len(data) % usb2.MAX_PACKET_SIZE:
                self._close()
            return len(data)
        if self.command is not None and self.command.direction == "in":
            n = min(len(buffer), self.remaining)
            buffer[:n] = self.bus.source.take(n)
            self.remaining -= n
            if not self.remaining:
                self._close()
        elif self.csws:
            n = bot.CSW_SIZE
            buffer[:n] = self.csws.pop(0).pack()
        else:
            n = 0
        return n


class FakeTransfer:
    def __init__(self, bus: FakeBus) -> None:
        self.bus = bus
        self.submitted = self.closed = False
        self.user_data = None
        self.index = -1
        self.status = 0
        self.actual = 0

    def setBulk(self, endpoint, buffer, callback=None, timeout=0):
        self.endpoint, self.callback, self.timeout = endpoint, callback, timeout
        self.buffer = buffer if isinstance(buffer, bytearray) else b""

    def setBuffer(self, data):
        self.buffer = data

    def setAddZeroPacket(self, state):
        self.zlp = state

    def getBuffer(self):
        return self.buffer

    def setUserData(self, value):
        self.user_data = value

    def getUserData(self):
        return self.user_data

    def getStatus(self):
        return self.status

    def getActualLength(self):
        return self.actual

    def submit(self):
        self.bus.submit(self)

    def cancel(self):
        self.bus.cancel(self)

    def close(self):
        self.closed = True


class FakeBus:
    """The device, its host controller and libusb's event loop (see the module docstring)."""

    def __init__(self, faults: Faults | None = None, *, serial: str = usb2.SERIAL,
                 features: usb2.Feature = usb2.NO_FEATURES) -> None:
        self.usb1 = load_usb1()
        self.features = features
        self.faults = faults or Faults()
        self.serial = serial
        self.queue: list[FakeTransfer] = []  # submitted, not yet handed back
        self.transfers: list[FakeTransfer] = []
        self.submits = self.in_flight = self.max_in_flight = 0
        self.random = random.Random(1)
        self.in_length = 0
        self.restart(Pattern.COUNTER)
        self.telemetry = {}
        self.claimed = False
        self.bot: FakeBotFramer | None = None  # set by SET_DATA_MODE(BOT)
        self.loop: bytearray | None = None      # SET_DATA_MODE(LOOPBACK): OUT bytes not yet back
        self.modes: list[int] = []              # every SET_DATA_MODE, in order
        self.alternates: list[tuple[int, int]] = []  # every setInterfaceAltSetting, in order

    def restart(self, pattern: Pattern) -> None:
        self.source, self.checker = PatternStream(pattern), PatternStream(pattern)
        self.pattern_errors, self.first_error = 0, usb2.NO_ERROR_OFFSET
        self.checked = 0

    # -- bulk --------------------------------------------------------------------------------
    def submit(self, transfer: FakeTransfer) -> None:
        usb1, index = self.usb1, self.submits
        if index == self.faults.gone_on_submit:
            raise usb1.USBErrorNoDevice(usb1.USBErrorNoDevice.value)
        self.submits += 1
        transfer.index, transfer.submitted = index, True
        status = getattr(usb1, self.faults.status.get(index, "TRANSFER_COMPLETED"))
        transfer.status, transfer.actual = status, 0
        if status == usb1.TRANSFER_COMPLETED:
            if self.bot is not None:  # DataMode.BOT: the framer decides what moves
                transfer.actual = self.bot.transfer(transfer.endpoint, transfer.buffer)
                if not transfer.endpoint & 0x80:
                    self.count("out", transfer.actual)
            elif self.loop is not None:  # DataMode.LOOPBACK: OUT comes back on IN
                if transfer.endpoint & 0x80:
                    n = min(len(transfer.buffer), len(self.loop))
                    transfer.buffer[:n] = self.loop[:n]
                    del self.loop[:n]
                else:
                    data = bytes(transfer.buffer)
                    self.check_out(data)
                    self.count("out", len(data))
                    self.loop += data
                    n = len(data)
                transfer.actual = n
            elif transfer.endpoint & 0x80:
                n = self.faults.short.get(index, len(transfer.buffer))
                if self.in_length:
                    n = min(n, self.in_length)
                transfer.buffer[:n] = self.source.take(n)
                transfer.actual = n
            else:
                data = bytes(transfer.buffer)
                self.check_out(data)
                self.count("out", len(data))
                transfer.actual = len(data)
        if transfer.endpoint & 0x80:
            self.count("in", transfer.actual)
        self.queue.append(transfer)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def check_out(self, data: bytes) -> None:
        """OUT data through the device's pattern checker."""
        result = self.checker.check(data)
        if result.errors and self.first_error == usb2.NO_ERROR_OFFSET:
            self.first_error = self.checked + result.first_error_offset
        self.pattern_errors += result.errors
        self.checked += len(data)

    def count(self, direction: str, n: int) -> None:
        """Count a transfer's bytes and, if it ended with one, its short packet."""
        for word, amount in ((f"{direction}_bytes", n),
                             (f"{direction}_short", 1 if n % usb2.MAX_PACKET_SIZE else 0)):
            self.telemetry[word] = self.telemetry.get(word, 0) + amount

    def cancel(self, transfer: FakeTransfer) -> None:
        if transfer.submitted:
            transfer.status = self.usb1.TRANSFER_CANCELLED
            transfer.index = -2  # a cancelled transfer is handed back even if "lost"

    def handle_events(self) -> None:
        ready = [t for t in self.queue if t.index not in self.faults.lost]
        if not ready:
            time.sleep(0.001)
            return
        if self.faults.order == "reverse":
            ready.reverse()
        elif self.faults.order == "shuffle":
            self.random.shuffle(ready)
        for transfer in ready:
            self.queue.remove(transfer)
            transfer.submitted = False
            self.in_flight -= 1
            transfer.callback(transfer)

    # -- endpoint 0: the gateware's vendor requests ------------------------------------------
    def control_read(self, request_type, request, value, index, length, timeout):
        if request == usb2.Request.GET_INFO:
            return usb2.pack_info(self.features)[:length]
        if request == usb2.Request.GET_TELEMETRY:
            # A word of a group the device was built without reads 0, as in the gateware.
            counted = set(usb2.present_words(self.features))
            values = {"magic": usb2.MAGIC, "version": usb2.PROTOCOL_VERSION, **self.telemetry,
                      "pattern_errors": self.pattern_errors,
                      "first_error_offset": self.first_error}
            return usb2.pack_telemetry({k: v for k, v in values.items() if k in counted})
        raise self.usb1.USBErrorPipe(self.usb1.USBErrorPipe.value)

    def control_write(self, request_type, request, value, index, data, timeout):
        if request == usb2.Request.SET_PATTERN:
            self.restart(Pattern(value))
        elif request == usb2.Request.SET_IN_TRANSFER:
            self.in_length, _ = usb2.decode_in_transfer(value, index)
        elif request == usb2.Request.CLEAR_TELEMETRY:
            self.telemetry = {}
        elif request == usb2.Request.SET_DATA_MODE and value in usb2.data_modes(self.features):
            self.modes.append(value)
            self.restart(self.source.pattern)
            self.bot = FakeBotFramer(self) if value == usb2.DataMode.BOT else None
            self.loop = bytearray() if value == usb2.DataMode.LOOPBACK else None
        else:
            raise self.usb1.USBErrorPipe(self.usb1.USBErrorPipe.value)

    # -- python-libusb1 objects --------------------------------------------------------------
    def handle(self) -> FakeHandle:
        return FakeHandle(self)

    def context(self) -> FakeContext:
        return FakeContext(self)

    def module(self) -> types.SimpleNamespace:
        """The ``usb1`` module as the backend sees it: real constants, this bus's context."""
        usb1 = types.SimpleNamespace(**vars(self.usb1))
        usb1.USBContext = lambda: FakeContext(self)
        return usb1


class FakeContext:
    def __init__(self, bus: FakeBus) -> None:
        self.bus = bus

    def open(self):
        return self

    def close(self):
        pass

    def getDeviceIterator(self, skip_on_error=False):
        yield FakeDevice(self.bus)

    def handleEventsTimeout(self, tv=0):
        self.bus.handle_events()


class FakeDevice:
    def __init__(self, bus: FakeBus) -> None:
        self.bus = bus

    def getVendorID(self):
        return usb2.VID

    def getProductID(self):
        return usb2.PID

    def getDeviceSpeed(self):
        return 3  # LIBUSB_SPEED_HIGH

    def getBusNumber(self):
        return 1

    def getPortNumberList(self):
        return [2]

    def getDeviceAddress(self):
        return 5

    def open(self):
        return FakeHandle(self.bus)


class FakeHandle:
    def __init__(self, bus: FakeBus) -> None:
        self.bus = bus

    def getSerialNumber(self):
        return self.bus.serial

    def setAutoDetachKernelDriver(self, enable):
        pass

    def claimInterface(self, number):
        self.bus.claimed = True

    def setInterfaceAltSetting(self, interface, alternate):
        self.bus.alternates.append((interface, alternate))

    def releaseInterface(self, number):
        self.bus.claimed = False

    def close(self):
        pass

    def getTransfer(self):
        transfer = FakeTransfer(self.bus)
        self.bus.transfers.append(transfer)
        return transfer

    def controlRead(self, *args):
        return self.bus.control_read(*args)

    def controlWrite(self, *args):
        self.bus.control_write(*args)


@pytest.fixture
def fake_bus(monkeypatch):
    """``fake_bus(features=..., **faults)`` -> a :class:`FakeBus` with those optional parts
    and :class:`Faults`, which ``usb:1209:0001`` then opens through the real backend code."""
    import busprobe.backends.usb.libusb_platform as platform

    def make(serial: str = usb2.SERIAL, features: usb2.Feature = usb2.NO_FEATURES,
             **faults) -> FakeBus:
        bus = FakeBus(Faults(**faults), serial=serial, features=features)
        monkeypatch.setattr(platform, "load_usb1", bus.module)
        return bus

    return make
