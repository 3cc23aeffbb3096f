"""USB 2.0 high-speed simulation: the busprobe gateware behind a bus-accurate host.

Layers, bottom up (like cocotbext's models):

``sim/hdl/ulpi_phy.sv``  ULPI PHY model in the simulator (per-byte work never reaches Python)
:mod:`.phy`                 its Python side: whole packets in and out
:mod:`.link`                host link layer: reset/chirp, SOF timeline, transactions
:mod:`.controller`          host controller: bulk/control scheduling by a HostProfile
:mod:`.session`             power-up and enumeration
:mod:`.server`, :mod:`.rpc`, :mod:`.backend`   the ``sim:usb2`` Transport over a socket
"""
