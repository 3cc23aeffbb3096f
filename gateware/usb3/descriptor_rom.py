"""GET_DESCRIPTOR at SuperSpeed from one ROM read through a registered address."""

from amaranth import Module, Mux, Signal
from amaranth.lib.memory import Memory
from busprobe.protocol import usb3
from luna.gateware.usb.stream import SuperSpeedStreamInterface
from luna.gateware.usb.usb3.application.descriptor import GetDescriptorHandler
from usb_protocol.emitters import DeviceDescriptorCollection

__all__ = ["DescriptorRomHandler", "descriptor_rom_layout"]

_WORD_BYTES = 4


def descriptor_rom_layout(descriptors: DeviceDescriptorCollection
                          ) -> tuple[list[int], dict[int, tuple[int, int]]]:
    """The ROM's words and where each descriptor is in it.

    Each descriptor starts on a word (four bytes, the SuperSpeed stream's width), little-endian
    as the stream carries them, padded with zeros; as in LUNA's ``GetDescriptorHandlerBlock``,
    but the directory (which descriptor starts where, how long it is) is decoded into
    flip-flops instead of read from the ROM, so a reply costs one ROM read a word.

    Returns
    -------
    (words, directory): the ROM's contents, and ``{wValue: (first word, length in bytes)}``.

    Raises
    ------
    ValueError: a descriptor longer than EP0's one packet (LUNA's control endpoint sends every
        data packet with sequence number 0, so a data stage is one packet at most).
    """
    words: list[int] = []
    directory: dict[int, tuple[int, int]] = {}
    for type_number, index, raw in descriptors:
        raw = bytes(raw)
        if len(raw) > usb3.CONTROL_MAX_PACKET_SIZE:
            raise ValueError(f"descriptor type {type_number} index {index} is {len(raw)} bytes; "
                             f"EP0 sends at most {usb3.CONTROL_MAX_PACKET_SIZE} in one packet")
        directory[type_number << 8 | index] = (len(words), len(raw))
        padded = raw + bytes(-len(raw) % _WORD_BYTES)
        words += [int.from_bytes(padded[i:i + _WORD_BYTES], "little")
                  for i in range(0, len(padded), _WORD_BYTES)]
    return words, directory


class DescriptorRomHandler(GetDescriptorHandler):
    """LUNA's SuperSpeed ``GetDescriptorHandler`` (its ports and behaviour), with every
    descriptor in one ROM read through a registered address.

    LUNA's handler builds a ``ConstantStreamGenerator`` per descriptor: a LUT ROM addressed by a
    byte counter, its ``last`` from the counter compared with the length, all multiplexed by
    ``wValue``. On the ECPIX-5 build the route from those counters into their ROMs (4 ns) made the
    ``ss`` clock miss 125 MHz on two nextpnr seeds of five. Here each path is one register to
    the next: ``wValue`` is decoded into the descriptor's first word and length, the reply's
    length (truncated to ``wLength``) and word count are registered before the data stage, and
    the ROM's address is a counter register, its output the ROM's own read register.

    The decode runs on every cycle from the SETUP's fields, which are stable from the SETUP
    until the next one; a data stage (``start``) comes at the earliest some cycles after its
    SETUP (the SETUP's ACK, the host's ACK TP), and the registers need three.

    ``tx`` keeps ``valid`` up from ``first`` to ``last`` while ``ready`` allows (LUNA's
    transmitter ends a packet on a cycle without ``valid``): it is meant to feed a
    ``RegisteredReadyBuffer``, whose ``ready`` is a flip-flop. A ``start`` restarts the reply
    (a retried data packet); a ``wLength`` of 0 sends nothing (there is no data stage); a
    ``wValue`` with no descriptor answers ``start`` with ``stall``.

    Attributes
    ----------
    value, length: Signal(16), input
        The SETUP's ``wValue`` (descriptor type and index) and ``wLength``.
    start: Signal(), input
        Strobe: send the reply (an ACK TP asked for the data packet).
    tx: SuperSpeedStreamInterface, output stream
        The reply, four bytes a word, ``valid`` a byte mask.
    tx_length: Signal(16), output
        The reply's length in bytes: the descriptor's, truncated to ``wLength``.
    stall: Signal(), output
        Strobe with ``start``: no such descriptor.

    Parameters
    ----------
    descriptor_collection: DeviceDescriptorCollection
        The descriptors (the same definition every other part of busprobe answers from).
    usb_domain: str
        The clock domain (``ss``).
    """

    def __init__(self, descriptor_collection: DeviceDescriptorCollection, *,
                 usb_domain: str = "ss"):
        super().__init__(descriptor_collection, usb_domain=usb_domain,
                         stream_type=SuperSpeedStreamInterface)
        self.words, self.directory = descriptor_rom_layout(descriptor_collection)

    def elaborate(self, platform):
        m = Module()
        sync = m.d[self._domain]
        words, directory = self.words, self.directory
        tx = self.tx
        longest = max(length for _, length in directory.values())
        max_words = (longest + _WORD_BYTES - 1) // _WORD_BYTES

        m.submodules.rom = rom = Memory(shape=32, depth=len(words), init=words)
        read = rom.read_port(domain=self._domain)

        # 1: wValue -> the descriptor (registered every cycle).
        known, first_word = Signal(), Signal(range(len(words)))
        descriptor_length = Signal(range(longest + 1))
        sync += known.eq(0)
        with m.Switch(self.value):
            for value, (word, length) in directory.items():
                with m.Case(value):
                    sync += [known.eq(1), first_word.eq(word), descriptor_length.eq(length)]
        # 2: the reply's length, truncated to wLength.
        reply_length = Signal(range(longest + 1))
        with m.If(self.length < descriptor_length):
            sync += reply_length.eq(self.length)
        with m.Else():
            sync += reply_length.eq(descriptor_length)
        m.d.comb += self.tx_length.eq(reply_length)
        # 3: its word count and the last word's byte mask.
        reply_words, last_mask = Signal(range(max_words + 1)), Signal(4)
        sync += reply_words.eq((reply_length + _WORD_BYTES - 1) >> 2)
        with m.Switch(reply_length[0:2]):
            for remainder, mask in ((0, 0b1111), (1, 0b0001), (2, 0b0011), (3, 0b0111)):
                with m.Case(remainder):
                    sync += last_mask.eq(mask)

        # The stream: the ROM's read register and these flags are the output stage; a word is
        # read (and the address counter moves on) whenever that stage is empty or taken.
        address = Signal(range(len(words)))
        remaining = Signal(range(max_words + 1))
        first_pending = Signal()
        valid, first, last = Signal(4), Signal(), Signal()
        m.d.comb += [read.addr.eq(address), tx.data.eq(read.data), tx.valid.eq(valid),
                     tx.first.eq(first), tx.last.eq(last)]
        advance = ~valid.any() | tx.ready
        m.d.comb += read.en.eq(advance)
        with m.If(self.start):
            m.d.comb += self.stall.eq(~known)
            sync += [address.eq(first_word), remaining.eq(Mux(known, reply_words, 0)),
                     first_pending.eq(1), valid.eq(0)]
        with m.Elif(advance):
            final = remaining == 1
            with m.If(remaining != 0):
                sync += [address.eq(address + 1), remaining.eq(remaining - 1),
                         first_pending.eq(0), first.eq(first_pending), last.eq(final),
                         valid.eq(0b1111)]
                with m.If(final):
                    sync += valid.eq(last_mask)
            with m.Else():
                sync += valid.eq(0)
        return m
