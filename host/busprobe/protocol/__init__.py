"""The host <-> device contract.

Everything that crosses between the host tool, the gateware and the simulation models is defined
here exactly once and imported by all three: vendor request numbers, telemetry layouts and the data
patterns. This package uses the standard library only (plus numpy, which the host needs anyway),
so gateware elaboration and the firmware header generator can import it without host extras.
"""
