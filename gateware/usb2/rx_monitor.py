"""A watcher of every packet the device receives, counting the ones it had to drop."""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb2

__all__ = ["RxPacketMonitor"]

#: Largest packet a high-speed bulk or control endpoint may be sent: PID, payload, CRC16.
MAX_PACKET_BYTES = 1 + usb2.MAX_PACKET_SIZE + 2
#: Endpoints the device has; a token to any other one is not for it.
ENDPOINTS = (0, usb2.EP_IN & 0x7F, usb2.EP_OUT)


def _crc5_ok(fields):
    """True when the 16 token bits (11 address/endpoint or frame bits, then the CRC5 as sent)
    are intact: the CRC5 of the first 11 bits (§8.3.5.1, x^5 + x^2 + 1, initial all ones,
    sent inverted MSB first) equals the last 5."""
    crc = [Const(1, 1)] * 5  # crc[0] is the register's LSB
    for i in range(11):
        feedback = fields[i] ^ crc[4]
        crc = [feedback, crc[0], crc[1] ^ feedback, crc[2], crc[3]]
    sent = Cat(*(~bit for bit in reversed(crc)))
    return sent == fields[11:16]


def _crc16_step(crc, byte):
    """The reflected CRC-16/USB register (polynomial 0xA001) after one more byte, LSB first."""
    bits = [crc[i] for i in range(16)]
    for i in range(8):
        feedback = bits[0] ^ byte[i]
        bits = bits[1:] + [Const(0, 1)]
        bits = [bit ^ feedback if (0xA001 >> n) & 1 else bit for n, bit in enumerate(bits)]
    return Cat(*bits)


class RxPacketMonitor(wiring.Component):
    """Classifies every packet on the UTMI receive path, beside LUNA's own receivers.

    LUNA's token detector and data receiver drop a corrupted packet silently, as the spec asks
    (§8.5.3: no handshake, the host retries). A device that drops packets without saying so
    would let a hostile or broken host pass for a slow one; this monitor counts them so the
    host can read what the device threw away. It only listens: it decides nothing.

    Each packet lands in exactly one class, checked in this order:

    - ``bad_pid``: the PID's check nibble is not its complement (§8.3.1), or a PID no device
      acts on (reserved, SPLIT, PRE/ERR);
    - ``malformed``: the PHY flagged a receive error, or the length does not fit the PID
      (a token is 3 bytes, a handshake 1, a data packet 3 to :data:`MAX_PACKET_BYTES`: longer
      is babble);
    - ``crc_error``: a token's CRC5 or a data packet's CRC16 does not check;
    - ``foreign``: an intact token (not SOF) for another address, or for an endpoint the device
      does not have; or an intact data packet that does not directly follow an intact OUT or
      SETUP token for the device (§8.5: data belongs to the token before it; after a token for
      another device, or a finished transaction, it is no one's here).

    Attributes
    ----------
    rx_active, rx_valid, rx_error: Signal(), input
        The UTMI receive strobes (``usb.utmi``).
    rx_data: Signal(8), input
        The UTMI received byte.
    address: Signal(7), input
        The device's current address (0 before SET_ADDRESS).
    packet: Signal(), output
        Strobe: a packet ended (any class, intact ones included).
    bad_pid, malformed, crc_error, foreign: Signal(), output
        Strobe with ``packet``: the packet's class, if it was dropped.
    """

    rx_active: In(1)
    rx_valid: In(1)
    rx_error: In(1)
    rx_data: In(8)
    address: In(7)
    packet: Out(1)
    bad_pid: Out(1)
    malformed: Out(1)
    crc_error: Out(1)
    foreign: Out(1)

    def elaborate(self, platform):
        m = Module()
        active = Signal()
        count = Signal(range(MAX_PACKET_BYTES + 2))  # saturates one past the largest packet
        pid = Signal(8)
        fields = Signal(16)
        crc = Signal(16, init=0xFFFF)
        errored = Signal()
        expect_data = Signal()  # the last packet was an intact OUT/SETUP token for us

        m.d.usb += active.eq(self.rx_active)
        with m.If(self.rx_active & ~active):
            m.d.usb += [count.eq(0), crc.eq(0xFFFF), errored.eq(0)]
        with m.Elif(self.rx_active):
            with m.If(self.rx_error):
                m.d.usb += errored.eq(1)
            with m.If(self.rx_valid):
                with m.If(count != MAX_PACKET_BYTES + 1):
                    m.d.usb += count.eq(count + 1)
                with m.If(count == 0):
                    m.d.usb += pid.eq(self.rx_data)
                with m.Else():
                    m.d.usb += crc.eq(_crc16_step(crc, self.rx_data))
                with m.If(count == 1):
                    m.d.usb += fields[:8].eq(self.rx_data)
                with m.If(count == 2):
                    m.d.usb += fields[8:].eq(self.rx_data)

        kind = pid[:2]  # 01 token, 11 data, 10 handshake, 00 special (§8.3.1 Table 8-1)
        code = pid[:4]
        pid_ok = pid[4:] == ~pid[:4]
        is_ping = code == 0b0100
        is_sof = code == 0b0101
        is_token = (kind == 0b01) | is_ping
        unsupported = (kind == 0b00) & ~is_ping
        length_ok = ((is_token & (count == 3))
                     | ((kind == 0b11) & (count >= 3) & (count <= MAX_PACKET_BYTES))
                     | ((kind == 0b10) & (count == 1)))
        crc_ok = ((is_token & _crc5_ok(fields))
                  | ((kind == 0b11) & (crc == 0xB001))
                  | (kind == 0b10))
        endpoint = fields[7:11]
        known_endpoint = 0
        for number in ENDPOINTS:
            known_endpoint |= endpoint == number
        for_us = (fields[:7] == self.address) & known_endpoint

        ended = active & ~self.rx_active & (count != 0)
        intact = pid_ok & ~unsupported & ~errored & length_ok & crc_ok
        is_data = kind == 0b11
        with m.If(ended):
            m.d.usb += expect_data.eq(intact & is_token & for_us
                                      & ((code == 0b0001) | (code == 0b1101)))
        m.d.comb += [
            self.packet.eq(ended),
            self.bad_pid.eq(ended & (~pid_ok | unsupported)),
            self.malformed.eq(ended & pid_ok & ~unsupported & (errored | ~length_ok)),
            self.crc_error.eq(ended & pid_ok & ~unsupported & ~errored & length_ok & ~crc_ok),
            self.foreign.eq(ended & intact & ((is_token & ~is_sof & ~for_us)
                                              | (is_data & ~expect_data))),
        ]
        return m
