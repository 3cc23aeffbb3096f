"""What the simulated hard IP reports while the link trains: the 7-series LTSSM states in order.

cocotbext-pcie has no physical layer (its link is up from the start), so the simulated PHY's
``ltssm``, ``link_up``, ``link_rate`` and ``link_width`` pads are driven by this script: the
states an endpoint's 7-series integrated block reports (``pl_ltssm_state``,
:data:`busprobe.protocol.pcie_soc.LTSSM_7SERIES`) for a train to L0 at 2.5 GT/s and, on a
faster link, the speed change through Recovery that follows (PCIe Base Spec 3.0 §4.2.6). The
dwell times are short stand-ins (the spec's Detect.Quiet alone is 12 ms), so the link history
shows the order and the rates, not real durations. The sequence runs before enumeration, as on
a board, where the host finds the device only after the link is up.
"""

from __future__ import annotations

from busprobe.protocol.pcie_soc import LTSSM_7SERIES
from cocotb.triggers import Timer

__all__ = ["train", "TRAINING", "SPEED_CHANGE"]

_CODE = {name: code for code, name in sorted(LTSSM_7SERIES.items(), reverse=True)}

#: ``(state, dwell in ns)`` from power-up to L0 at 2.5 GT/s; Configuration.Complete.xN follows
#: the width.
TRAINING = (("Detect.Quiet", 1200), ("Detect.Active", 100), ("Polling.Active", 200),
            ("Polling.Configuration", 100), ("Configuration.Linkwidth.State0", 50),
            ("Configuration.Linkwidth.Accept0", 50), ("Configuration.Lanenum.Wait", 50),
            ("Configuration.Lanenum.Accept", 50), ("Configuration.Complete", 50),
            ("Configuration.Idle", 50))
#: From L0 to L0 at the link's top rate (the new rate takes effect in Recovery.Speed).
SPEED_CHANGE = (("Recovery.RcvrLock", 100), ("Recovery.RcvrCfg", 50), ("Recovery.Speed0", 100),
                ("Recovery.RcvrLock", 100), ("Recovery.RcvrCfg", 50), ("Recovery.Idle", 50))


async def train(signals: dict, *, gen: int, width: int) -> None:
    """Drive ``signals`` (``ltssm``, ``link_up``, ``link_rate``, ``link_width`` handles, any may
    be missing) through training to L0 at ``gen`` x ``width``."""

    def drive(name: str, value: int) -> None:
        if name in signals:
            signals[name].value = value

    async def state(name: str, dwell_ns: int) -> None:
        if name == "Configuration.Complete":
            name = f"Configuration.Complete.x{width}"
        drive("ltssm", _CODE[name])
        await Timer(dwell_ns, unit="ns")

    drive("link_up", 0)
    drive("link_rate", 0)
    drive("link_width", width.bit_length() - 1)
    for name, dwell in TRAINING:
        await state(name, dwell)
    drive("ltssm", _CODE["L0"])
    drive("link_up", 1)
    if gen > 1:
        await Timer(200, unit="ns")
        for name, dwell in SPEED_CHANGE:
            if name == "Recovery.Speed0":
                drive("link_rate", gen - 1)
            await state(name, dwell)
        drive("ltssm", _CODE["L0"])
