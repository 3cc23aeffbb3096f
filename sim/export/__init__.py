"""Exports of the simulated gateware to other programs: usbredir for virtual machines."""
