"""The soft PCIe endpoint's LTSSM states and link status word (PCIe Base 3.0 §4.2.5, §4.2.6).

The status word is what the gateware's :class:`~busprobe.gateware.pcie.soft.ltssm.Ltssm` shows
and what telemetry will carry to the host: the state, whether the link is up, the link and lane
numbers the root port gave, and the width and speed it trained at (0 while not trained).
"""

from __future__ import annotations

import dataclasses
import enum

__all__ = ["LtssmState", "LinkSpeed", "LINK_STATUS_FIELDS", "LinkStatus", "unpack_link_status",
           "state_name"]


class LtssmState(enum.IntEnum):
    """The states (and substates) the soft endpoint's LTSSM has."""

    DETECT_QUIET = 0
    DETECT_ACTIVE = 1
    POLLING_ACTIVE = 2
    POLLING_COMPLIANCE = 3
    POLLING_CONFIGURATION = 4
    CONFIG_LINKWIDTH_START = 5
    CONFIG_LINKWIDTH_ACCEPT = 6
    CONFIG_LANENUM_WAIT = 7
    CONFIG_COMPLETE = 8
    CONFIG_IDLE = 9
    L0 = 10
    RECOVERY_RCVRLOCK = 11
    RECOVERY_RCVRCFG = 12
    RECOVERY_IDLE = 13


class LinkSpeed(enum.IntEnum):
    """Link Status register encoding of the current link speed (§7.8.8)."""

    NONE = 0
    GEN1 = 1  # 2.5 GT/s
    GEN2 = 2  # 5.0 GT/s


#: (name, bits) of the status word, least significant first.
LINK_STATUS_FIELDS = (("state", 4), ("link_up", 1), ("width", 6), ("speed", 4),
                      ("link_number", 8), ("lane_number", 5))


@dataclasses.dataclass(frozen=True)
class LinkStatus:
    state: LtssmState
    link_up: bool
    width: int
    speed: LinkSpeed
    link_number: int
    lane_number: int


def unpack_link_status(word: int) -> LinkStatus:
    """The fields of a status word as :data:`LINK_STATUS_FIELDS` packs them."""
    values = {}
    for name, bits in LINK_STATUS_FIELDS:
        values[name] = word & ((1 << bits) - 1)
        word >>= bits
    return LinkStatus(LtssmState(values["state"]), bool(values["link_up"]), values["width"],
                      LinkSpeed(values["speed"]), values["link_number"], values["lane_number"])


def state_name(state: LtssmState) -> str:
    """The spec's spelling of an LTSSM state: ``DETECT_QUIET`` -> ``Detect.Quiet``."""
    return ".".join(part.capitalize() for part in state.name.split("_"))
