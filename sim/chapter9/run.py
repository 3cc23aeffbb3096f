"""Running matrix rows against a device: :class:`MatrixRun`, over any bus.

A bus gives it two things: ``control(case)``, which makes the control transfer of a row and
returns the :class:`Answer` (the data, an ACK, or a STALL and the stage it came in), and
``accepted(case)``, which keeps its host model in step with a request the device accepted
(the address SET_ADDRESS gave, the data toggles or sequence numbers SET_CONFIGURATION,
SET_INTERFACE and CLEAR_FEATURE(ENDPOINT_HALT) restart). The runner moves the device between the
Default, Address and Configured states as each row needs, the way a host does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .model import ACK, DEVICE, OUT, Case, Expect, Req, State, request_type

__all__ = ["Answer", "MatrixRun"]


@dataclass(frozen=True)
class Answer:
    """What the device did with a control transfer: sent ``data`` ("data"), completed it
    without a data stage ("ack"), STALLed it at ``stage`` ("stall"), or stopped answering
    ("timeout": no row allows that)."""

    kind: str
    data: bytes = b""
    stage: str = ""

    def meets(self, expect: Expect) -> bool:
        if expect.kind == "any":
            return self.kind != "timeout"
        return self.kind == expect.kind and (expect.kind != "data" or self.data == expect.data)

    def __str__(self) -> str:
        if self.kind == "stall":
            return f"STALL at the {self.stage} stage"
        if self.kind == "timeout":
            return f"no answer ({self.stage})"
        return self.data.hex(" ") if self.kind == "data" else self.kind.upper()


class MatrixRun:
    """Runs matrix rows against a device from ``state``.

    Parameters
    ----------
    control: async callable
        ``control(case) -> Answer``: the row's control transfer on the bus.
    accepted: callable
        ``accepted(case)``: the device accepted ``case``; the host model follows it.
    address: int
        The address the runner gives the device when it leaves the Default state.
    state: str
        The state the device is in now.

    Attributes
    ----------
    results: list[tuple[Case, Answer]]
        Every row run (follow-up rows included), in order.
    """

    def __init__(self, control: Callable[[Case], Awaitable[Answer]],
                 accepted: Callable[[Case], None], address: int,
                 state: State = "default") -> None:
        self.control, self.accepted, self.address = control, accepted, address
        self.state: State = state
        self.results: list[tuple[Case, Answer]] = []

    def failures(self) -> list[str]:
        return [f"{case} [{case.why}]: got {answer}" for case, answer in self.results
                if not answer.meets(case.expect)]

    async def _set(self, request: int, value: int) -> None:
        case = Case(self.state, request_type(OUT, DEVICE), request, value, 0, 0, ACK,
                    "moving to the state a row needs")
        answer = await self.control(case)
        if answer.kind != "ack":
            raise AssertionError(f"{case}: got {answer}")
        self._effect(case)

    async def enter(self, state: State) -> None:
        """Move the device to ``state`` the way a host does."""
        while self.state != state:
            if self.state == "default":
                await self._set(Req.SET_ADDRESS, self.address)
            elif self.state == "address" and state == "default":
                await self._set(Req.SET_ADDRESS, 0)
            else:
                await self._set(Req.SET_CONFIGURATION, int(self.state == "address"))

    def _effect(self, case: Case) -> None:
        """The state an accepted standard request leaves; the host model follows it."""
        if case.request_type == request_type(OUT, DEVICE):
            if case.request == Req.SET_ADDRESS:
                self.state = "address" if case.value else "default"
            elif case.request == Req.SET_CONFIGURATION:
                self.state = "configured" if case.value else "address"
        self.accepted(case)

    async def run(self, case: Case) -> Answer:
        """One row (in its state) and, once it is accepted, the rows checking its effect."""
        await self.enter(case.state)
        answer = await self.control(case)
        self.results.append((case, answer))
        if answer.kind in ("ack", "data"):
            self._effect(case)
            if case.leaves is not None and self.state != case.leaves:
                raise AssertionError(f"{case}: the runner is in {self.state}, the row "
                                     f"leaves {case.leaves}")
            for follow in case.then:
                await self.run(follow)
        return answer
