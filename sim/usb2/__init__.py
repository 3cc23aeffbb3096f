"""USB 2.0 high-speed simulation: the busprobe gateware behind a bus-accurate host.

Layers, bottom up (like cocotbext's models):

``sim/hdl/ulpi_phy.sv``  ULPI PHY model in the simulator (per-byte work never reaches Python)
:mod:`.phy`                 its Python side: whole packets in and out
:mod:`.link`                host link layer: reset/chirp, SOF timeline, transactions
:mod:`.bulk_transactions`   one bulk IN/OUT transaction for a transfer (toggles, PING)
:mod:`.controller`          host controller: which transaction next, by a HostProfile; its
                            transfer queue is ``busprobe.sim.transfer_engine`` (shared with USB3)
:mod:`.session`             power-up and enumeration
:mod:`.hostile`             a hostile bus: corrupted packets among valid traffic
:mod:`.server`, :mod:`.backend`   the ``sim:usb2`` platform over ``busprobe.sim.rpc``
"""
