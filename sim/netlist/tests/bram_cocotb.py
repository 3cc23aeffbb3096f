"""cocotb tests of the block RAM models against the datasheet's behaviour (run by
test_netlist_bram_models.py on hdl/ecp5_bram_tb.sv).

Lattice TN1264 (ECP5 Memory Usage Guide): reads are synchronous; on a write cycle the port's
output shows nothing new (NORMAL), the new word (WRITETHROUGH) or the old one
(READBEFOREWRITE); the output register adds a cycle and loads only with OCE; RST clears the
outputs, never the array (SYNC on an edge, ASYNC at once); a port works only while its chip
selects match CSDECODE; x18 writes take two byte enables, x36 four. The clocks are driven edge
by edge, so every check reads the outputs between edges.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import Timer

INPUTS = ("clka", "clkb", "wea", "web", "rsta", "rstb", "csa", "csb", "ada", "adb", "dia", "dib")


async def _idle(dut) -> None:
    for name in INPUTS:
        getattr(dut, name).value = 0
    for name in ("cea", "ceb", "ocea", "oceb"):
        getattr(dut, name).value = 1
    await Timer(1, "ns")


async def _edge(dut, a: bool = True, b: bool = True) -> None:
    """One rising edge on port A's and/or port B's clock, then the outputs settle."""
    if a:
        dut.clka.value = 1
    if b:
        dut.clkb.value = 1
    await Timer(1, "ns")
    dut.clka.value = 0
    dut.clkb.value = 0
    await Timer(1, "ns")


async def _write_a(dut, address: int, data: int, high: int = 0) -> None:
    dut.wea.value, dut.ada.value, dut.dia.value, dut.dib.value = 1, address, data, high
    await _edge(dut, b=False)
    dut.wea.value = 0


async def _read_a(dut, address: int) -> None:
    dut.wea.value, dut.ada.value = 0, address
    await _edge(dut, b=False)


async def _read_b(dut, address: int) -> None:
    dut.web.value, dut.adb.value = 0, address
    await _edge(dut, a=False)


def x9(index: int) -> int:
    """ADx of 9-bit word ``index`` (row index >> 1, byte index & 1)."""
    return index << 3


def value(signal) -> int:
    return int(signal.value)


@cocotb.test()
async def write_modes_decide_what_a_write_cycle_outputs(dut):
    await _idle(dut)
    await _write_a(dut, x9(5), 0x1AA)
    assert (value(dut.doa_rbw), value(dut.doa_wt), value(dut.doa_normal)) == (0, 0x1AA, 0)
    await _read_a(dut, x9(5))
    assert (value(dut.doa_rbw), value(dut.doa_wt), value(dut.doa_normal)) == (0x1AA,) * 3
    await _read_a(dut, x9(6))
    await _write_a(dut, x9(5), 0x055)
    # old word / new word / what the last read left (word 6, never written)
    assert (value(dut.doa_rbw), value(dut.doa_wt), value(dut.doa_normal)) == (0x1AA, 0x055, 0)


@cocotb.test()
async def a_read_is_synchronous_and_ce_low_holds_the_output(dut):
    await _idle(dut)
    await _write_a(dut, x9(1), 0x011)
    await _write_a(dut, x9(2), 0x022)
    await _read_a(dut, x9(1))
    assert value(dut.doa_normal) == 0x011
    dut.ada.value = x9(2)
    await Timer(1, "ns")
    assert value(dut.doa_normal) == 0x011, "the output followed the address without an edge"
    dut.cea.value = 0
    await _edge(dut, b=False)
    assert value(dut.doa_normal) == 0x011, "the output changed with CE low"
    dut.cea.value = 1
    await _edge(dut, b=False)
    assert value(dut.doa_normal) == 0x022


@cocotb.test()
async def port_b_reads_the_old_word_while_port_a_writes_it_on_the_same_edge(dut):
    await _idle(dut)
    await _write_a(dut, x9(7), 0x0F0)
    dut.wea.value, dut.ada.value, dut.dia.value, dut.adb.value = 1, x9(7), 0x100, x9(7)
    await _edge(dut)
    assert value(dut.dob_rbw) == 0x0F0
    dut.wea.value = 0
    await _edge(dut, a=False)
    assert value(dut.dob_rbw) == 0x100


@cocotb.test()
async def x18_byte_enables_write_only_their_byte(dut):
    await _idle(dut)
    await _write_a(dut, (4 << 4) | 0b11, 0x3FFFF)
    await _write_a(dut, (4 << 4) | 0b01, 0x00000)  # ADA0: bits 8:0 only
    await _read_b(dut, 4 << 4)
    assert value(dut.dob_outreg) == 0x3FE00


@cocotb.test()
async def the_output_register_adds_a_cycle_and_loads_only_with_oce(dut):
    await _idle(dut)
    await _write_a(dut, (3 << 4) | 0b11, 0x2AAAA)
    await _read_a(dut, 0)          # row 0: 0 into the latch and then the register
    await _read_a(dut, 3 << 4)
    assert value(dut.doa_outreg) == 0, "the registered output showed the word one edge early"
    await _edge(dut, b=False)
    assert value(dut.doa_outreg) == 0x2AAAA
    dut.ocea.value = 0
    await _read_a(dut, 0)
    await _edge(dut, b=False)
    assert value(dut.doa_outreg) == 0x2AAAA, "the output register loaded with OCE low"
    dut.ocea.value = 1
    await _edge(dut, b=False)
    assert value(dut.doa_outreg) == 0


@cocotb.test()
async def sync_reset_clears_the_output_on_an_edge_even_with_ce_low_and_keeps_the_array(dut):
    await _idle(dut)
    await _write_a(dut, (5 << 4) | 0b11, 0x15555)
    await _read_b(dut, 5 << 4)
    assert value(dut.dob_outreg) == 0x15555
    dut.rstb.value, dut.ceb.value = 1, 0
    await Timer(1, "ns")
    assert value(dut.dob_outreg) == 0x15555, "a SYNC reset acted without an edge"
    await _edge(dut, a=False)
    assert value(dut.dob_outreg) == 0
    dut.rstb.value, dut.ceb.value = 0, 1
    await _read_b(dut, 5 << 4)
    assert value(dut.dob_outreg) == 0x15555, "the reset cleared the array"


@cocotb.test()
async def async_reset_clears_the_output_at_once(dut):
    await _idle(dut)
    await _write_a(dut, x9(3), 0x1F0)
    await _read_a(dut, x9(3))
    assert value(dut.doa_async) == 0x1F0
    dut.rsta.value = 1
    await Timer(1, "ns")
    assert value(dut.doa_async) == 0
    dut.rsta.value = 0
    await _read_a(dut, x9(3))
    assert value(dut.doa_async) == 0x1F0


@cocotb.test()
async def initval_rows_hold_18_of_20_bits_and_x4_words_skip_each_bytes_ninth_bit(dut):
    await _idle(dut)
    words = []
    for index in range(8):
        await _read_b(dut, index << 2)
        words.append(value(dut.dob_x4))
    assert words == [0x1, 0x8, 0xF, 0x6, 0xF, 0xF, 0xF, 0xF]


@cocotb.test()
async def a_9_bit_write_and_an_18_bit_read_share_one_array(dut):
    await _idle(dut)
    await _write_a(dut, x9(10), 0x0AB)
    await _write_a(dut, x9(11), 0x1CD)
    await _read_b(dut, 5 << 4)
    assert value(dut.dob_mixed) == (0x1CD << 9) | 0x0AB


@cocotb.test()
async def a_port_works_only_while_its_chip_selects_match_csdecode(dut):
    await _idle(dut)
    await _write_a(dut, x9(2), 0x077)  # CS 000, CSDECODE 101: not selected
    dut.csa.value = 0b101
    await _read_a(dut, x9(2))
    assert value(dut.doa_cs) == 0, "a write went through with the chip selects not matching"
    await _write_a(dut, x9(2), 0x077)
    await _read_a(dut, x9(2))
    assert value(dut.doa_cs) == 0x077
    dut.csa.value = 0
    await _read_a(dut, x9(0))
    assert value(dut.doa_cs) == 0x077, "an unselected port's output changed"


@cocotb.test()
async def x36_words_with_four_byte_enables_in_dp16kd_and_pdpw16kd(dut):
    await _idle(dut)
    await _write_a(dut, (3 << 5) | 0b1111, 0x12345, 0x2ABCD)
    await _write_a(dut, (3 << 5) | 0b0100, 0, 0)  # byte 2: DI[26:18], the low 9 bits of DIB
    await _read_b(dut, 3 << 5)
    word = (0x2ABCD & ~0x1FF) << 18 | 0x12345
    assert (value(dut.dob_pdp) << 18 | value(dut.doa_pdp)) == word
    assert value(dut.do_pdpw) == word
    await _read_b(dut, 6 << 4)  # x18 read of the word's low half
    assert value(dut.do_pdpw18) == 0x12345
    await _read_b(dut, 7 << 4)
    assert value(dut.do_pdpw18) == 0x2ABCD & ~0x1FF
