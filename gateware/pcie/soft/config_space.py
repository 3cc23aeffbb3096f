"""The soft endpoint's configuration space: CfgRd0/CfgWr0 answered with completions (PCIe Base
3.0 §2.2.7, §2.2.9, §7)."""

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import pcie_config as cfg
from busprobe.protocol.pcie_config import CplStatus, TlpKind

from .fc_init import NON_POSTED_HEADERS
from .ltssm import LINK_STATUS
from .word_deframer import RX_TLP_BYTE
from .word_framer import TLP_BYTE, TLP_DW, tlp_units, unit_size

__all__ = ["ConfigSpace"]

#: A completion waiting to be sent: everything its header and data need.
_COMPLETION = data.StructLayout({
    "status": 3, "with_data": 1, "tc": 3, "attr": 2, "requester": 16, "tag": 8,
    "completer": 16, "data": 32,
})
_CAPTURED = cfg.CONFIG_REQUEST_BYTES + 4  # a configuration write: header and one data DW
_TOO_LONG = _CAPTURED + 5  # longer than any configuration request (a write with a digest)


class ConfigSpace(wiring.Component):
    """Function 0's configuration space, as :mod:`busprobe.protocol.pcie_config` lays it out.

    Takes the received TLPs as the data link layer gives them (units as they arrive, then
    ``rx_accept`` if the TLP is kept) and answers each kept configuration request with a
    completion on ``tlp``, in order:

    - CfgRd0 / CfgWr0 to function 0: CplD with the dword / Cpl, Successful Completion. A write
      changes only the bits its byte enables cover and :data:`~.pcie_config.CONFIG_SPACE`
      marks writable (RW1C bits are cleared by a 1); a register not implemented reads 0 and
      ignores writes. Every CfgWr0 completed so captures the bus and device number it was sent
      to (§2.2.6.2): the completer ID of its completion and every later one (until the first,
      bus 0, device 0). A CfgRd0 captures nothing.
    - CfgRd1 / CfgWr1 (a Type 1 request reaching an endpoint), a request to another function,
      or a poisoned CfgWr0: Cpl with Unsupported Request, nothing changed, Device Status'
      Unsupported Request Detected set.
    - A configuration request with a length other than one DW, a Last DW BE, or a size that
      does not match its header: malformed, dropped without completion (counted).

    TLPs of other types pass by untouched: the memory requests to BAR0 are another block's.
    Completions wait in a queue of ``depth``; a request arriving with the queue full is
    dropped (counted) and the root complex's completion timeout will tell it.

    Attributes
    ----------
    rx_tlp: stream of ``unit``, input (never stalled)
        Received TLP bytes or DWs, ``first`` on the first (``SoftDataLink.rx_tlp``).
    rx_accept: Signal(), input
        Strobe: the TLP whose units came is good and in sequence (``SoftDataLink.rx_accept``);
        a TLP never accepted is forgotten when the next one starts.
    link_status: Signal(LINK_STATUS), input
        The LTSSM's status word: Link Status' current speed and width.
    tlp: stream of TLP_BYTE (or TLP_DW with DWs), output
        Completions for the replay buffer (``SoftDataLink.tlp``); valid from a completion's
        first unit to its last, as the framer needs.
    completer_id: Signal(16), output
        Bus, device (captured from CfgWr0) and function 0: the endpoint's ID.
    memory_space, bus_master: Signal(), output
        Command register bits: BAR0 decoded; the endpoint may issue requests.
    bar0_base: Signal(32), output
        BAR0's address (its low flag bits 0).
    msi_enable: Signal(), output; msi_address: Signal(64), output; msi_data: Signal(16), output
        The MSI capability as the host programmed it.
    max_payload_size, max_request_size: Signal(16), output
        DevCtl's MPS and MRRS in bytes, as LitePCIe's PHYs give them; MPS no larger than
        supported (:func:`~.pcie_config.payload_size_in_force`), MRRS as written.
    dropped, malformed: Signal(16), output
        Configuration requests dropped with the completion queue full; malformed ones (wrap).
    np_held: Signal(), output; np_released: Signal(), output
        A request answered at ``rx_accept`` (its header credit held), and a completion's last
        unit taken (the credit released): :class:`~.update_fc.UpdateFc`'s inputs.

    Parameters
    ----------
    depth: int
        Completions that may wait for the link.
    unit: StructLayout
        What TLPs arrive in: :data:`~.word_deframer.RX_TLP_BYTE` (the default) or
        :data:`~.word_deframer.RX_TLP_DW` (the four-symbol link's); completions then leave as
        :data:`~.word_framer.TLP_DW`.
    """

    def __init__(self, *, depth: int = NON_POSTED_HEADERS, unit: data.StructLayout = RX_TLP_BYTE):
        self._depth = depth
        self._unit_bytes = unit_size(unit)
        super().__init__({
            "rx_tlp": In(stream.Signature(unit, always_ready=True)),
            "rx_accept": In(1),
            "link_status": In(LINK_STATUS),
            "tlp": Out(stream.Signature(TLP_DW if self._unit_bytes == 4 else TLP_BYTE)),
            "completer_id": Out(16),
            "memory_space": Out(1),
            "bus_master": Out(1),
            "bar0_base": Out(32),
            "msi_enable": Out(1),
            "msi_address": Out(64),
            "msi_data": Out(16),
            "max_payload_size": Out(16),
            "max_request_size": Out(16),
            "dropped": Out(16),
            "malformed": Out(16),
            "np_held": Out(1),
            "np_released": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.queue = queue = fifo.SyncFIFOBuffered(width=_COMPLETION.size,
                                                           depth=self._depth)

        # Capture the first bytes of every TLP; the verdict comes at rx_accept. --------------
        # Counted in bytes whatever the unit, so the sizes below are the header's; saturating
        # at _TOO_LONG or just past it (a unit's bytes more), beyond every size checked.
        unit_bytes, width = self._unit_bytes, 8 * self._unit_bytes
        shift = unit_bytes.bit_length() - 1  # a byte count's unit index: count >> shift
        header = Signal(8 * _CAPTURED)
        count = Signal(range(_TOO_LONG + unit_bytes))
        unit = self.rx_tlp.payload.data
        with m.If(self.rx_tlp.valid):
            with m.If(self.rx_tlp.payload.first):
                m.d.sync += [header[:width].eq(unit), count.eq(unit_bytes)]
            with m.Else():
                with m.If(count < _TOO_LONG):
                    m.d.sync += count.eq(count + unit_bytes)
                with m.If(count < _CAPTURED):
                    m.d.sync += header.word_select(count[shift:4], width).eq(unit)
        # Header byte i either way: a DW's byte 0 (first on the wire) is in its bits 7:0.
        b = [header[8 * i:8 * (i + 1)] for i in range(_CAPTURED)]

        kind, flags = b[0], b[cfg.REQ_FLAGS]
        poisoned, digest = flags[6], flags[7]
        is_read0, is_write0 = kind == TlpKind.CFG_RD0, kind == TlpKind.CFG_WR0
        is_type1 = (kind == TlpKind.CFG_RD1) | (kind == TlpKind.CFG_WR1)
        is_write = kind[6]
        is_config = is_read0 | is_write0 | is_type1
        # One DW, no Last DW BE, and the bytes the header says (a digest is 4 more, unchecked).
        size = Signal(range(_CAPTURED + 5))
        m.d.comb += size.eq(cfg.CONFIG_REQUEST_BYTES + Mux(is_write, 4, 0) + Mux(digest, 4, 0))
        well_formed = ((Cat(b[cfg.REQ_LENGTH], flags[:2]) == 1)
                       & (b[cfg.REQ_BYTE_ENABLES][4:] == 0) & (count == size))
        target_bus, target_devfn = b[cfg.REQ_TARGET_ID], b[cfg.REQ_TARGET_ID + 1]
        target_function = target_devfn[:3]
        dword = Cat(b[cfg.REQ_REGISTER + 1][2:], b[cfg.REQ_REGISTER][:4])  # 0..1023
        byte_enables = b[cfg.REQ_BYTE_ENABLES][:4]
        written = Cat(*b[cfg.CONFIG_REQUEST_BYTES:cfg.CONFIG_REQUEST_BYTES + 4])
        bit_enables = Cat(*(byte_enables[i].replicate(8) for i in range(4)))

        request = self.rx_accept & is_config
        supported = (is_read0 | is_write0) & (target_function == cfg.FUNCTION) & \
            ~(is_write0 & poisoned)
        answer = Signal()  # the request is answered now
        m.d.comb += [answer.eq(request & well_formed & queue.w_rdy),
                     self.np_held.eq(answer)]
        with m.If(request & ~well_formed):
            m.d.sync += self.malformed.eq(self.malformed + 1)
        with m.Elif(request & ~queue.w_rdy):
            m.d.sync += self.dropped.eq(self.dropped + 1)
        write = answer & supported & is_write0

        # The register file: only writable bits are stored; the rest is the reset constant.
        registers = {}
        for offset, spec in cfg.CONFIG_SPACE.items():
            stored = spec.writable | spec.clear_on_write
            if not stored:
                continue
            register = Signal(32, init=spec.reset & stored, name=f"config_{offset:03x}")
            registers[offset] = register
            at_offset = write & (dword == offset >> 2)
            set_bits = Const(spec.writable, 32) & bit_enables
            clear_bits = Const(spec.clear_on_write, 32) & bit_enables & written
            new = (register & ~set_bits & ~clear_bits) | (written & set_bits)
            if offset == cfg.PM_OFFSET + cfg.PM_PMCSR:
                # A PowerState the function lacks (D1, D2) is ignored, the write completed.
                valid_state = Const(0, 1)
                for state in cfg.PMCSR_POWER_STATES:
                    valid_state |= written[:2] == state
                with m.If(at_offset & valid_state):
                    m.d.sync += register.eq(new)
            else:
                with m.If(at_offset):
                    m.d.sync += register.eq(new)

        def value(offset):
            spec = cfg.CONFIG_SPACE[offset]
            if offset not in registers:
                return Const(spec.reset, 32)
            stored = spec.writable | spec.clear_on_write
            return Const(spec.reset & ~stored, 32) | registers[offset]

        # Unsupported Request Detected: set by every UR sent (a UR never writes a register).
        devctl = registers[cfg.EXP_OFFSET + cfg.EXP_DEVCTL]
        ur_detected = 16 + cfg.DEVSTA_UR_DETECTED.bit_length() - 1
        with m.If(answer & ~supported):
            m.d.sync += devctl[ur_detected].eq(1)

        link_status = ((self.link_status.speed << cfg.LNKSTA_SPEED_SHIFT)
                       | (self.link_status.width << cfg.LNKSTA_WIDTH_SHIFT))
        read_data = Signal(32)
        with m.Switch(dword):
            for offset in cfg.CONFIG_SPACE:
                with m.Case(offset >> 2):
                    live = value(offset)
                    if offset == cfg.LINK_STATUS_DWORD:
                        live = live | (link_status << 16)  # Link Status: upper half
                    m.d.comb += read_data.eq(live)
            with m.Default():
                m.d.comb += read_data.eq(0)  # not implemented: reads 0

        # The bus and device a CfgWr0 names are the endpoint's from its completion on.
        bus, device = Signal(8), Signal(5)
        completer = Signal(16)
        m.d.comb += [self.completer_id.eq(Cat(Const(cfg.FUNCTION, 3), device, bus)),
                     completer.eq(self.completer_id)]
        with m.If(write):
            m.d.sync += [bus.eq(target_bus), device.eq(target_devfn[3:])]
            m.d.comb += completer.eq(Cat(Const(cfg.FUNCTION, 3), target_devfn[3:], target_bus))

        entry = Signal(_COMPLETION)
        requester = Cat(b[cfg.REQ_REQUESTER_ID + 1], b[cfg.REQ_REQUESTER_ID])
        m.d.comb += [
            entry.status.eq(Mux(supported, CplStatus.SC, CplStatus.UR)),
            entry.with_data.eq(supported & is_read0),
            entry.tc.eq(b[1][4:7]),
            entry.attr.eq(flags[4:6]),
            entry.requester.eq(requester),
            entry.tag.eq(b[cfg.REQ_TAG]),
            entry.completer.eq(completer),
            entry.data.eq(read_data),
            queue.w_data.eq(entry),
            queue.w_en.eq(answer),
        ]

        # Completions out, byte 0 first; a queued one is sent whole without a gap. ---------------
        head = Signal(_COMPLETION)
        m.d.comb += head.eq(queue.r_data)
        # Header DW 0: Fmt/Type, TC, TD/EP/Attr/Length; DW 1: completer, status, byte count;
        # DW 2: requester, tag, lower address 0; then the data dword, its byte 0 first.
        out_bytes = [
            Mux(head.with_data, TlpKind.CPL_D, TlpKind.CPL), head.tc << 4, head.attr << 4,
            head.with_data, head.completer[8:], head.completer[:8],
            Cat(Const(cfg.CONFIG_COMPLETION_BYTE_COUNT >> 8, 5), head.status),
            Const(cfg.CONFIG_COMPLETION_BYTE_COUNT & 0xFF, 8),
            head.requester[8:], head.requester[:8], head.tag, Const(0, 8),
            *(head.data[8 * i:8 * (i + 1)] for i in range(4)),
        ]
        out = Array(tlp_units(out_bytes, unit_bytes))
        index = Signal(range(len(out)))
        last = index == Mux(head.with_data, (cfg.COMPLETION_HEADER_BYTES + 4) // unit_bytes - 1,
                            cfg.COMPLETION_HEADER_BYTES // unit_bytes - 1)
        m.d.comb += [self.tlp.valid.eq(queue.r_rdy), self.tlp.payload.data.eq(out[index]),
                     self.tlp.payload.last.eq(last)]
        with m.If(self.tlp.valid & self.tlp.ready):
            m.d.sync += index.eq(Mux(last, 0, index + 1))
            m.d.comb += [queue.r_en.eq(last), self.np_released.eq(last)]

        # What the rest of the endpoint needs from the registers. --------------------------------
        command = registers[cfg.COMMAND]
        msi_control = registers[cfg.MSI_OFFSET] >> 16
        mps = devctl[cfg.DEVCTL_MPS_SHIFT:cfg.DEVCTL_MPS_SHIFT + 3]
        mrrs = devctl[cfg.DEVCTL_MRRS_SHIFT:cfg.DEVCTL_MRRS_SHIFT + 3]
        m.d.comb += [
            self.memory_space.eq((command & cfg.COMMAND_MEMORY_SPACE) != 0),
            self.bus_master.eq((command & cfg.COMMAND_BUS_MASTER) != 0),
            self.bar0_base.eq(registers[cfg.BAR0]),
            self.msi_enable.eq((msi_control & cfg.MSI_ENABLE) != 0),
            self.msi_address.eq(Cat(registers[cfg.MSI_OFFSET + cfg.MSI_ADDRESS_LO],
                                    registers[cfg.MSI_OFFSET + cfg.MSI_ADDRESS_HI])),
            self.msi_data.eq(registers[cfg.MSI_OFFSET + cfg.MSI_DATA][:16]),
        ]
        with m.Switch(mps):
            for code in range(8):
                with m.Case(code):
                    m.d.comb += self.max_payload_size.eq(cfg.payload_size_in_force(code))
        with m.Switch(mrrs):
            for code in range(8):
                with m.Case(code):
                    m.d.comb += self.max_request_size.eq(cfg.request_size_in_force(code))
        return m
