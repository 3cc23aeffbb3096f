"""The UAS information units as Linux's ``include/linux/usb/uas.h`` lays them out (the sizes
and offsets its ``uas`` driver sends and reads), and the status-pipe parser's refusals."""

import pytest
from busprobe.protocol import uas


def test_iu_sizes_are_those_of_linux_uas_h():
    # struct command_iu 32 (16-byte CDB), sense_iu head 16, response_iu 8, task_mgmt_iu 16,
    # iu (READ/WRITE READY) 4.
    assert (uas.COMMAND_SIZE, uas.SENSE_HEADER_SIZE, uas.RESPONSE_SIZE, uas.TASK_SIZE,
            uas.READY_SIZE) == (32, 16, 8, 16, 4)


def test_a_command_iu_puts_tag_lun_and_cdb_where_the_gateware_reads_them():
    cdb = bytes((0x28, 0, 0, 0, 1, 0, 0, 0, 240, 0))
    iu = uas.command_iu(0x1234, cdb, lun=3)
    assert iu[uas.COMMAND_OFFSETS["iu_id"]] == uas.IuId.COMMAND
    assert iu[2:4] == b"\x12\x34"
    assert iu[uas.COMMAND_OFFSETS["lun"]:][:8] == bytes((0, 3, 0, 0, 0, 0, 0, 0))
    assert iu[16:] == cdb + bytes(6)
    with pytest.raises(ValueError, match="1..16"):
        uas.command_iu(1, bytes(17))


def test_task_management_names_the_function_and_the_task():
    iu = uas.task_management_iu(9, uas.TaskFunction.ABORT_TASK, task_tag=5)
    assert iu[0] == uas.IuId.TASK_MANAGEMENT and iu[2:4] == b"\0\x09"
    assert iu[uas.TASK_OFFSETS["function"]] == 0x01 and iu[6:8] == b"\0\x05"


def test_status_pipe_ius_parse_back():
    sense = bytes(range(18))
    assert uas.parse_iu(uas.sense_iu(7, uas.Status.CHECK_CONDITION, sense)) == uas.Iu(
        uas.IuId.SENSE, 7, uas.Status.CHECK_CONDITION, sense)
    assert uas.parse_iu(uas.sense_iu(7, uas.Status.GOOD)) == uas.Iu(uas.IuId.SENSE, 7, 0)
    assert uas.parse_iu(uas.ready_iu(3, read=True)) == uas.Iu(uas.IuId.READ_READY, 3)
    assert uas.parse_iu(uas.ready_iu(3, read=False)).kind is uas.IuId.WRITE_READY
    assert uas.parse_iu(uas.response_iu(2, uas.ResponseCode.OVERLAPPED_TAG)) == uas.Iu(
        uas.IuId.RESPONSE, 2, 0x0A)
    assert uas.pipe_usage(uas.Pipe.DATA_OUT) == bytes((4, 0x24, 4, 0))


@pytest.mark.parametrize(("data", "message"), [
    (b"\x06\x00", "shorter than its 4-byte head"),
    (b"\x02\x00\x00\x01", "IU ID 0x02"),
    (b"\x06\x00\x00\x01\x00", "READ_READY IU is 5 bytes"),
    (uas.sense_iu(1, 2, bytes(18))[:-1], "its length says 34"),
    (uas.command_iu(1, b"\x00"), "does not come on the status pipe"),
])
def test_a_malformed_status_iu_is_one_clear_error(data, message):
    with pytest.raises(ValueError, match=message):
        uas.parse_iu(data)
