"""A direction and a framing are enum members that are their text: the result document, the
messages and a point read back from a file (plain text) compare and print as before."""

import json

import pytest
from busprobe.protocol.names import PCIE_DIRECTIONS, USB_DIRECTIONS, Direction, Framing


def test_a_member_is_its_text_in_comparisons_json_and_messages():
    assert Direction.IN == "in" and "loopback" == Direction.LOOPBACK and Framing.BOT == "bot"
    assert json.dumps({Direction.OUT: [Framing.UAS]}) == '{"out": ["uas"]}'
    assert f"{Direction.WRITE} {Framing.STREAM}" == "write stream"
    assert {"in": 1}[Direction.IN] == 1  # a table keyed by text finds a member
    assert USB_DIRECTIONS == ("in", "out") and PCIE_DIRECTIONS == ("write", "read")


@pytest.mark.parametrize(("kind", "text", "message"), [
    (Direction, "sideways", "direction 'sideways' is not one of in, out, write, read, loopback"),
    (Framing, "scsi", "protocol 'scsi' is not one of stream, bot, uas"),
])
def test_text_that_names_no_member_is_refused_in_one_line(kind, text, message):
    with pytest.raises(ValueError) as error:
        kind.parse(text)
    assert str(error.value) == message


def test_parse_gives_the_member():
    assert Direction.parse("loopback") is Direction.LOOPBACK
    assert Framing.parse("uas") is Framing.UAS
