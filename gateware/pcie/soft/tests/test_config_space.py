"""The soft endpoint's configuration space (Amaranth simulation): configuration requests built
and completions parsed by cocotbext-pcie's ``Tlp`` (a peer's encoder and decoder), registers
decoded by the host's own config-space reader (:mod:`busprobe.protocol.pci_config`)."""

import struct

import pytest
from amaranth import Module
from amaranth.lib import wiring
from busprobe.gateware.pcie.soft.config_space import ConfigSpace
from busprobe.gateware.pcie.soft.data_link import SoftDataLink
from busprobe.gateware.pcie.soft.word_deframer import RX_TLP_BYTE, RX_TLP_DW
from busprobe.protocol import pcie, pcie_config
from busprobe.protocol.pci_config import PcieCapability, encode_size, find_capability
from busprobe.protocol.pcie_ltssm import LinkSpeed, LtssmState
from busprobe.sim.pcie.symbol.amaranth_bench import (
    SIM_TIMING,
    receive_tlps,
    simulate,
    until_dl_active,
)
from busprobe.sim.pcie.symbol.partner import RootPortPartner
from busprobe.sim.pcie.symbol.word_exchange import WordExchange
from cocotbext.pcie.core.caps.common import PciCapId
from cocotbext.pcie.core.tlp import CplStatus, Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId

ROOT = PcieId(0, 0, 0)  # the requester: the root complex
EXP = pcie_config.EXP_OFFSET
DEVCTL = EXP + pcie_config.EXP_DEVCTL
L0_X1_GEN1 = {"state": LtssmState.L0, "link_up": 1, "width": 1, "speed": LinkSpeed.GEN1,
              "link_number": 0, "lane_number": 0}
#: Every behaviour below holds for TLPs received and completions sent as bytes and as DWs.
UNITS = pytest.mark.parametrize("unit_bytes", [1, 4])


def request(kind: TlpType, offset: int, data: bytes | None = None, *, tag: int = 0, bus: int = 1,
            device: int = 0, function: int = 0) -> Tlp:
    """A configuration request as cocotbext-pcie's root complex builds one: ``data`` (1..4
    bytes) written at byte ``offset``, or the dword at ``offset`` read."""
    tlp = Tlp()
    tlp.fmt_type = kind
    tlp.requester_id = ROOT
    tlp.completer_id = PcieId(bus, device, function)
    tlp.tag = tag
    if data is None:
        tlp.set_addr_be(offset, 4)
    else:
        tlp.set_addr_be_data(offset, data)
    return tlp


def read(offset: int, **kw) -> Tlp:
    return request(TlpType.CFG_READ_0, offset, **kw)


def write(offset: int, value: int, size: int = 4, **kw) -> Tlp:
    return request(TlpType.CFG_WRITE_0, offset, value.to_bytes(size, "little"), **kw)


OUTPUTS = ("completer_id", "memory_space", "bus_master", "bar0_base", "msi_enable",
           "msi_address", "msi_data", "max_payload_size", "max_request_size", "dropped",
           "malformed")


def run(tlps, *, accepted=lambda index: True, ready=lambda cycle: True, settle: int = 40,
        link_status=L0_X1_GEN1, unit_bytes: int = 1):
    """Feed ``tlps`` (``Tlp`` or raw bytes) as the data link layer does: a byte (or DW) a
    clock, then ``rx_accept`` one clock later unless ``accepted(index)`` says it was dropped.
    Returns the completions (``Tlp.unpack``) and the outputs once all is sent."""
    dut = ConfigSpace(unit=RX_TLP_DW if unit_bytes == 4 else RX_TLP_BYTE)
    completions: list[Tlp] = []
    outputs = {}

    async def feed(ctx):
        ctx.set(dut.link_status, link_status)
        await receive_tlps(ctx, dut, [bytes(tlp.pack()) if isinstance(tlp, Tlp) else tlp
                                      for tlp in tlps], accepted, unit_bytes=unit_bytes)
        await ctx.tick().repeat(settle)
        while ctx.get(dut.tlp.valid):
            await ctx.tick()
        outputs.update({name: ctx.get(getattr(dut, name)) for name in OUTPUTS})

    async def collect(ctx):
        current = bytearray()
        cycle = 0
        while True:
            ctx.set(dut.tlp.ready, ready(cycle))
            _, _, valid, taken, unit, last = await ctx.tick().sample(
                dut.tlp.valid, dut.tlp.ready, dut.tlp.payload.data, dut.tlp.payload.last)
            cycle += 1
            if current:
                assert valid, "a completion paused between its first and last byte"
            if valid and taken:
                current.extend(unit.to_bytes(unit_bytes, "little"))
                if last:
                    completions.append(Tlp.unpack(bytes(current)))
                    current = bytearray()

    simulate(dut, feed, collect)
    return completions, outputs


def expected(req: Tlp, completer: PcieId, data: int | None = None, *,
             status=CplStatus.SC) -> Tlp:
    """What cocotbext-pcie's own function model answers to ``req`` (Byte Count 4)."""
    if data is not None:
        cpl = Tlp.create_completion_data_for_tlp(req, completer)
        cpl.set_data(struct.pack("<L", data))
    else:
        cpl = Tlp.create_completion_for_tlp(req, completer, status=status)
    cpl.byte_count = pcie_config.CONFIG_COMPLETION_BYTE_COUNT
    return cpl


def value(cpl: Tlp) -> int:
    assert cpl.fmt_type == TlpType.CPL_DATA and cpl.status == CplStatus.SC, cpl
    return struct.unpack("<L", cpl.get_data())[0]


def config_image(writes=(), *, size: int = 0x104, **kw) -> tuple[bytes, dict]:
    """Config space bytes 0..size after ``writes``, read dword by dword."""
    reads = [read(offset, tag=offset // 4 & 0xFF) for offset in range(0, size, 4)]
    completions, outputs = run([*writes, *reads], **kw)
    reads_back = completions[len(writes):]
    assert [c.tag for c in reads_back] == [r.tag for r in reads]
    return b"".join(struct.pack("<L", value(c)) for c in reads_back), outputs


@UNITS
def test_identity_reads_as_the_litepcie_design_in_cocotbext_pcie_completions(unit_bytes):
    reqs = [read(0x00, tag=7), read(0x08, tag=8), read(0x0C, tag=9), read(0x2C, tag=10)]
    completions, _ = run(reqs, unit_bytes=unit_bytes)
    assert completions == [
        expected(reqs[0], ROOT, pcie.DEVICE_ID << 16 | pcie.VENDOR_ID),
        expected(reqs[1], ROOT, pcie_config.CLASS_CODE << 8 | pcie_config.REVISION_ID),
        expected(reqs[2], ROOT, 0),  # Type 0 header, single function, no BIST
        expected(reqs[3], ROOT, pcie_config.SUBSYSTEM_ID << 16
                 | pcie_config.SUBSYSTEM_VENDOR_ID),
    ]
    assert all(c.check() and c.lower_address == 0 for c in completions)


@UNITS
def test_capability_chain_from_0x34_reaches_pm_msi_and_pcie_and_nothing_extended(unit_bytes):
    image, _ = config_image(unit_bytes=unit_bytes)
    assert image[pcie_config.PCI_STATUS] & pcie_config.PCI_STATUS_CAP_LIST
    chain, offset = [], image[0x34]
    while offset:
        chain.append((offset, image[offset]))
        offset = image[offset + 1]
    assert chain == [(0x40, PciCapId.PM), (0x48, PciCapId.MSI), (0x60, PciCapId.EXP)]
    assert find_capability(image, PciCapId.MSI) == 0x48  # the host's walk finds the same
    msi_control = int.from_bytes(image[0x4A:0x4C], "little")
    assert msi_control == 1 << 7  # 64-bit address capable, 1 vector, disabled
    exp_flags = int.from_bytes(image[0x62:0x64], "little")
    assert (exp_flags & 0xF, exp_flags >> 4 & 0xF) == (2, 0)  # version 2, Endpoint
    assert image[0x100:0x104] == bytes(4)  # no extended capability: a zero header at 0x100
    assert image[0x14:0x28] == bytes(20)  # BARs 1..5 not implemented


@UNITS
def test_devcap_says_mps_512_and_link_registers_say_gen1_x1(unit_bytes):
    image, outputs = config_image(size=0xA0, unit_bytes=unit_bytes)
    exp = PcieCapability.parse(image)
    assert exp.offset == EXP
    assert exp.mps_supported == 512 == pcie.MAX_PAYLOAD_SIZE
    assert (exp.mps, exp.mrrs) == (128, 512)  # reset values
    assert (outputs["max_payload_size"], outputs["max_request_size"]) == (128, 512)
    assert (exp.link_speed_cap, exp.link_width_cap) == ("gen1", 1)
    assert (exp.link_speed, exp.link_width, exp.link_up) == ("gen1", 1, True)


@UNITS
def test_link_status_follows_the_ltssm_and_is_not_writable(unit_bytes):
    untrained = dict(L0_X1_GEN1, state=LtssmState.DETECT_QUIET, link_up=0, width=0,
                     speed=LinkSpeed.NONE)
    image, _ = config_image([write(pcie_config.LINK_STATUS_DWORD, 0xFFFF_FFFF)], size=0xA0,
                            link_status=untrained, unit_bytes=unit_bytes)
    exp = PcieCapability.parse(image)
    assert (exp.link_width, exp.link_up) == (0, False)
    link_control = int.from_bytes(image[EXP + 0x10:EXP + 0x12], "little")
    assert link_control == 0xCB  # ASPM control, RCB, common clock, extended synch: RW


@UNITS
def test_devctl_write_of_mps_256_and_mrrs_4096_shows_on_the_outputs_and_reads_back(unit_bytes):
    devctl = encode_size(256) << 5 | encode_size(4096) << 12 | 1 << 4
    image, outputs = config_image([write(DEVCTL, devctl, 2)], size=0xA0, unit_bytes=unit_bytes)
    exp = PcieCapability.parse(image)
    assert (exp.mps, exp.mrrs, exp.devctl) == (256, 4096, devctl)
    assert (outputs["max_payload_size"], outputs["max_request_size"]) == (256, 4096)


@UNITS
def test_an_mps_above_devcap_reads_back_as_written_but_the_endpoint_keeps_to_512(unit_bytes):
    # The spec makes the field RW and forbids software to exceed DevCap; this endpoint keeps
    # what was written (so a read shows the host its own mistake) and enforces 512.
    image, outputs = config_image([write(DEVCTL, encode_size(1024) << 5, 2)], size=0xA0,
                                  unit_bytes=unit_bytes)
    assert PcieCapability.parse(image).mps == 1024
    assert outputs["max_payload_size"] == 512
    _, outputs = run([write(DEVCTL, 7 << 5 | 7 << 12, 2)],  # both reserved encodings
                     unit_bytes=unit_bytes)
    assert (outputs["max_payload_size"], outputs["max_request_size"]) == (512, 4096)


@UNITS
def test_bar0_sizing_all_ones_reads_the_size_mask_then_takes_an_address(unit_bytes):
    reqs = [write(0x10, 0xFFFF_FFFF), read(0x10), write(0x10, 0xFE00_1234), read(0x10),
            write(0x04, 0x0006, 2), read(0x04)]
    completions, outputs = run(reqs, unit_bytes=unit_bytes)
    mask = value(completions[1])
    assert mask & 0xF == 0  # memory, 32-bit, non-prefetchable
    assert (~(mask & ~0xF) + 1) & 0xFFFF_FFFF == pcie.BAR0_SIZE
    assert value(completions[3]) == 0xFE00_0000 == outputs["bar0_base"]
    assert value(completions[5]) == 0x0010_0006  # capability list; memory space, bus master
    assert (outputs["memory_space"], outputs["bus_master"]) == (1, 1)
    assert [c.fmt_type for c in completions[::2]] == [TlpType.CPL] * 3


@UNITS
def test_writes_to_read_only_fields_change_nothing_and_still_complete(unit_bytes):
    before, _ = config_image(size=0xA0, unit_bytes=unit_bytes)
    writes = [write(offset, 0xFFFF_FFFF) for offset in (0x00, 0x08, 0x2C, 0x34, 0x40, EXP,
                                                        EXP + 4, EXP + 0xC, EXP + 0x2C,
                                                        EXP + 0x30, 0x14, 0x100)]
    writes.append(write(0x04, 0xFFFF, 2))  # Command: only its RW bits
    writes.append(write(0x4A, 0x0080, 2))  # MSI Message Control, 64-bit bit: read-only
    after, outputs = config_image(writes, size=0xA0, unit_bytes=unit_bytes)
    changed = {i // 4 * 4 for i in range(len(before)) if before[i] != after[i]}
    assert changed == {0x04}
    assert int.from_bytes(after[4:6], "little") == pcie_config.COMMAND_WRITABLE  # no I/O Space
    assert int.from_bytes(after[0x4A:0x4C], "little") == 1 << 7
    assert outputs["completer_id"] == 0x0100  # every write above completed (bus 1)


@UNITS
def test_byte_enables_limit_a_write_to_its_bytes(unit_bytes):
    reqs = [write(0x10, 0xFE00_0000), write(0x12, 0xCD, 1), write(0x11, 0xAB, 1), read(0x10),
            write(0x3C, 0xFFFF_FFFF), read(0x3C)]
    completions, outputs = run(reqs, unit_bytes=unit_bytes)
    # Byte 2 replaced, byte 3 kept; byte 1 is below BAR0's 64 KiB size, so read-only.
    assert value(completions[3]) == 0xFECD_0000 == outputs["bar0_base"]
    assert value(completions[5]) == 0xFF  # Interrupt Line RW, Interrupt Pin 0 (no INTx)


@UNITS
def test_msi_address_data_and_enable_as_the_host_programs_them(unit_bytes):
    reqs = [write(0x4C, 0xFEE0_1003), write(0x50, 0x0000_0001), write(0x54, 0x4321_8765),
            write(0x4A, 0x0001, 2), read(0x48), read(0x4C), read(0x54)]
    completions, outputs = run(reqs, unit_bytes=unit_bytes)
    assert value(completions[4]) >> 16 == 1 << 7 | 1  # 64-bit, enabled
    assert value(completions[5]) == 0xFEE0_1000  # bits 1:0 read 0
    assert value(completions[6]) == 0x8765  # 16-bit message data
    assert outputs["msi_enable"] == 1
    assert outputs["msi_address"] == 0x1_FEE0_1000
    assert outputs["msi_data"] == 0x8765


@UNITS
def test_type1_other_functions_and_poisoned_writes_get_unsupported_request(unit_bytes):
    poisoned = write(0x04, 0x0006, bus=6)
    poisoned.ep = True
    reqs = [request(TlpType.CFG_READ_1, 0x00, bus=2), request(TlpType.CFG_WRITE_1, 0x04,
            b"\x06\x00\x00\x00", bus=2), read(0x00, function=1),
            write(0x04, 0x6, bus=7, function=2), poisoned, read(0x04), read(DEVCTL),
            write(DEVCTL, 1 << 19), read(DEVCTL)]
    for tag, req in enumerate(reqs):
        req.tag = tag
    completions, outputs = run(reqs, unit_bytes=unit_bytes)
    assert completions[:5] == [expected(r, ROOT, status=CplStatus.UR) for r in reqs[:5]]
    assert value(completions[5]) == 0x0010_0000  # Command untouched by all of them
    assert outputs["completer_id"] == 0x0100  # only the last CfgWr0 captured (bus 1)
    assert value(completions[6]) >> 16 & pcie_config.DEVSTA_UR_DETECTED
    assert value(completions[8]) >> 16 == 0  # RW1C: a 1 written clears it


@UNITS
def test_completer_id_is_captured_from_cfgwr0_only(unit_bytes):
    reqs = [read(0x00, bus=5), write(0x3C, 0x11, 1, bus=3, device=4), read(0x00, bus=3),
            request(TlpType.CFG_READ_1, 0x00, bus=9)]
    completions, outputs = run(reqs, unit_bytes=unit_bytes)
    assert [c.completer_id for c in completions] == [
        PcieId(0, 0, 0), PcieId(3, 4, 0), PcieId(3, 4, 0), PcieId(3, 4, 0)]
    assert outputs["completer_id"] == int(PcieId(3, 4, 0))


@UNITS
def test_power_state_takes_d3hot_and_d0_and_ignores_d1(unit_bytes):
    completions, _ = run([write(0x44, 3, 2), read(0x44), write(0x44, 1, 2), read(0x44),
                          write(0x44, 0, 2), read(0x44)], unit_bytes=unit_bytes)
    states = [value(c) & 3 for c in completions[1::2]]
    assert states == [3, 3, 0]
    assert value(completions[1]) & pcie_config.PMCSR_NO_SOFT_RESET


@UNITS
def test_malformed_dropped_and_other_tlps_get_no_completion(unit_bytes):
    too_long = read(0x00, tag=1)
    too_long.length = 2
    last_be = read(0x00, tag=2)
    last_be.last_be = 0xF
    # Cut short of its data DW. The four-symbol link delivers only whole DWs (the word
    # deframer makes a TLP ending off lane 3 malformed), so there the cut is at a DW.
    cut = bytes(write(0x3C, 0x55, 1, tag=3).pack())[:14 if unit_bytes == 1 else 12]
    memory_read = Tlp()
    memory_read.fmt_type = TlpType.MEM_READ
    memory_read.set_addr_be(0x1000, 4)
    memory_read.tag = 4
    with_digest = read(0x3C, tag=6)
    with_digest.td = True  # an ECRC follows the header; the endpoint does not check it
    reqs = [too_long, last_be, cut, memory_read, write(0x3C, 0x66, 1, tag=5),
            bytes(with_digest.pack()) + bytes(4)]
    completions, outputs = run(reqs, accepted=lambda index: index != 4,  # 4: a bad LCRC
                               unit_bytes=unit_bytes)
    assert [c.tag for c in completions] == [6]
    assert value(completions[0]) == 0  # the write the data link layer dropped never happened
    assert outputs["malformed"] == 3


@UNITS
def test_completions_wait_for_the_link_and_a_full_queue_drops_and_counts(unit_bytes):
    reqs = [read(0x00, tag=tag) for tag in range(6)]
    # The link takes nothing until all six have arrived, then stalls every third byte.
    completions, outputs = run(reqs, ready=lambda cycle: cycle > 200 and cycle % 3 != 0,
                               unit_bytes=unit_bytes)
    assert [c.tag for c in completions] == [0, 1, 2, 3]  # the queue holds 4
    assert outputs["dropped"] == 2
    assert all(value(c) == pcie.DEVICE_ID << 16 | pcie.VENDOR_ID for c in completions)


def test_over_the_link_a_root_port_writes_and_reads_config_space():
    link = SoftDataLink(timing=SIM_TIMING, ack_latency=40)
    config = ConfigSpace(unit=RX_TLP_DW)
    top = Module()
    top.submodules.link, top.submodules.config = link, config
    wiring.connect(top, link.rx_tlp, config.rx_tlp)
    wiring.connect(top, config.tlp, link.tlp)
    top.d.comb += [config.rx_accept.eq(link.rx_accept), config.link_status.eq(link.status)]
    partner = RootPortPartner(link=1, lane=0)
    exchange = WordExchange(link, partner)
    devctl = encode_size(256) << 5 | encode_size(512) << 12
    reqs = [write(DEVCTL, devctl, 2, bus=1, tag=1), read(DEVCTL, bus=1, tag=2),
            read(EXP + 0x10, bus=1, tag=3)]
    outputs = {}

    async def testbench(ctx):
        await until_dl_active(ctx, exchange)
        for seq, req in enumerate(reqs):
            partner.send_tlp(seq, bytes(req.pack()))
        await exchange.run(ctx, cycles=600)
        outputs["mps"] = ctx.get(config.max_payload_size)

    simulate(top, testbench)
    tlps = [Tlp.unpack(p.payload) for p in partner.received if p.kind == "tlp"]
    assert [p.status for p in partner.received if p.kind == "tlp"] == ["good"] * 3
    completer = PcieId(1, 0, 0)
    assert tlps[0] == expected(reqs[0], completer)
    assert value(tlps[1]) & 0xFFFF == devctl
    assert value(tlps[2]) >> 16 == LinkSpeed.GEN1 | 1 << 4  # trained: 2.5 GT/s, x1
    assert outputs["mps"] == 256
