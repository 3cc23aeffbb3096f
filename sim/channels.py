"""The requests a simulation hosting several devices answers itself (:mod:`.shared_clock`):
a channel joins the shared clock, waits for the others to start together, leaves it. Spelled
here once for the simulator side and the host side (which must not import cocotb)."""

__all__ = ["JOIN", "LEAVE", "BARRIER"]

JOIN, LEAVE, BARRIER = "@join", "@leave", "@barrier"
