"""cocotbext-pcie's ``Tlp`` and busprobe's :class:`~busprobe.sim.pcie.tlp_speed.FastTlp`: the
same answers, the repeated work skipped (``fmt_type`` by table, ``check`` remembered only while
it passed and nothing it reads changed)."""

from __future__ import annotations

import pytest
from busprobe.sim.pcie.tlp_speed import FastTlp, _key
from cocotbext.pcie.core.tlp import Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId


def _write(address: int, length: int) -> FastTlp:
    tlp = FastTlp()
    tlp.fmt_type = TlpType.MEM_WRITE
    tlp.requester_id = PcieId(1, 0, 0)
    tlp.set_addr_be_data(address, bytes(length))
    return tlp


def test_fmt_type_is_the_member_of_every_fmt_and_type_pair_and_refuses_others():
    tlp = FastTlp()
    for member in TlpType:
        tlp.fmt, tlp.type = member.value
        assert tlp.fmt_type is member
        tlp.fmt, tlp.type = int(member.value[0]), member.value[1]  # plain ints, as unpacked
        assert tlp.fmt_type is member
        tlp.fmt_type = member  # upstream's setter
        assert (tlp.fmt, tlp.type) == member.value
    tlp.fmt, tlp.type = 2, 0x1F
    with pytest.raises(ValueError):
        tlp.fmt_type  # noqa: B018 - the access is the test


def test_check_passes_again_and_fails_as_soon_as_a_field_it_reads_no_longer_fits(capsys):
    tlp = _write(0x1000, 64)
    assert tlp.check() and tlp.check()
    tlp.length += 1  # the length field no longer matches the data
    assert not tlp.check()
    assert not tlp.check()  # a failure is checked (and reported) every time
    assert capsys.readouterr().out.count("length field does not match data") == 2
    tlp.length -= 1
    assert tlp.check()
    tlp.address = 0x1FE0  # now the 64 bytes cross a 4 KiB boundary
    assert not tlp.check()
    assert not Tlp.check(tlp)  # upstream's own answer


def test_a_copy_is_checked_on_its_own():
    tlp = _write(0x1000, 64)
    assert tlp.check()
    copy = FastTlp(tlp)
    copy.data = copy.data[:-4]
    assert not copy.check() and tlp.check()


def test_a_copy_starts_with_what_its_checked_original_remembered():
    tlp = _write(0x1000, 64)
    assert tlp.check()
    copy = FastTlp(tlp)
    assert copy._checked == _key(copy)  # check() answers at once
    assert copy == tlp  # upstream's equality: the same fields
    assert FastTlp(_write(0x2000, 64))._checked is None  # never checked
    plain = Tlp()
    plain.fmt_type = TlpType.MEM_WRITE
    assert FastTlp(plain)._checked is None and FastTlp(plain).fmt_type is TlpType.MEM_WRITE


def test_unpacking_gives_a_fast_tlp():
    tlp = _write(0x1000, 64)
    unpacked = FastTlp.unpack(tlp.pack())
    assert type(unpacked) is FastTlp and unpacked.check() and unpacked.address == 0x1000
