"""The telemetry block as the host reads it: a block-RAM copy of the counters, written by a scan."""

import struct

from amaranth import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb2

__all__ = ["TelemetrySnapshot", "INFO_BYTES", "INFO_WORD", "ZERO_WORD", "RAM_WORDS"]

#: The GET_INFO answer, packed by the protocol's own format.
INFO_BYTES = struct.pack(usb2.INFO_FORMAT, usb2.MAGIC, usb2.PROTOCOL_VERSION,
                         usb2.MAX_PACKET_SIZE)

#: Word address of the GET_INFO answer in the snapshot RAM (right after the telemetry block).
INFO_WORD = usb2.TELEMETRY_WORDS
#: Word address of a zero word (the GET_INTERFACE answer: alternate setting 0).
ZERO_WORD = INFO_WORD + 2
#: Words in the snapshot RAM.
RAM_WORDS = ZERO_WORD + 1


def mux_tree(words, index):
    """``words[index]`` as a balanced tree of 2:1 multiplexers on the bits of ``index``.

    Written out because a flat ``Array`` lookup becomes a priority multiplexer that maps to far
    more ECP5 LUTs than the tree, which packs into LUT4 + PFUMX + L6MUX21.
    """
    level = list(words)
    bit = 0
    while len(level) > 1:
        pairs = [level[i:i + 2] for i in range(0, len(level), 2)]
        level = [pair[0] if len(pair) == 1 else Mux(index[bit], pair[1], pair[0])
                 for pair in pairs]
        bit += 1
    return level[0]


class TelemetrySnapshot(wiring.Component):
    """Copies the live telemetry words into a block RAM the request handler reads from.

    On ``capture`` a scan writes word ``k`` of ``words`` into RAM word ``k``, one word per cycle,
    in protocol order. The host reads the block from the first word on at one byte per cycle,
    and its first byte is asked for long after the SETUP that started the scan (the SETUP's
    handshake and the IN token come first), so the scan, four times faster, is always ahead of
    the reader: every byte read belongs to the new snapshot. The words are taken within
    ``TELEMETRY_WORDS`` cycles (under 1 µs at 60 MHz) rather than in one cycle; that is what
    replaces a 1,300-flip-flop snapshot register and a 164-way byte multiplexer.

    The GET_INFO answer lives in the same RAM, at :data:`INFO_WORD`, and a zero word at
    :data:`ZERO_WORD`, so a single read port feeds the control endpoint's transmitter.

    Attributes
    ----------
    words: ArrayLayout(32, TELEMETRY_WORDS), input
        Live telemetry, in protocol order.
    capture: Signal(), input
        Strobe: start a snapshot.
    read_address: Signal(range(RAM_WORDS)), input
        Word to read; its value is on ``read_data`` one cycle later.
    read_data: Signal(32), output
        The word read.
    """

    words: In(data.ArrayLayout(32, usb2.TELEMETRY_WORDS))
    capture: In(1)
    read_address: In(range(RAM_WORDS))
    read_data: Out(32)

    def elaborate(self, platform):
        m = Module()
        count = usb2.TELEMETRY_WORDS
        info = [int.from_bytes(INFO_BYTES[i:i + 4], "little") for i in range(0, 8, 4)]
        # In block RAM: yosys would otherwise pick LUT RAM for 44 words, whose read sits in
        # the control endpoint's logic (it did, on the ECP5 critical path).
        m.submodules.ram = ram = Memory(shape=32, depth=RAM_WORDS,
                                        init=[0] * count + info + [0],
                                        attrs={"ram_style": "block"})
        write = ram.write_port(domain="usb")
        read = ram.read_port(domain="usb")

        # The multiplexer output is registered before the RAM write, so the tree is a path of
        # its own rather than in series with the RAM's setup time.
        index = Signal(range(count + 1), init=count)
        selected = Signal(32)
        write_index = Signal(range(count + 1), init=count)
        m.d.usb += [selected.eq(mux_tree([self.words[k] for k in range(count)], index)),
                    write_index.eq(index)]
        m.d.comb += [
            write.addr.eq(write_index),
            write.data.eq(selected),
            write.en.eq(write_index != count),
            read.addr.eq(self.read_address),
            self.read_data.eq(read.data),
        ]
        with m.If(self.capture):
            m.d.usb += index.eq(0)
        with m.Elif(index != count):
            m.d.usb += index.eq(index + 1)
        return m
