"""USB 3.0 SuperSpeed simulation: the device gateware behind a PIPE-level link partner.

Layers, bottom up (docs/DESIGN.md §4.1):

``sim/hdl/pipe_partner.sv``  the link partner at the PIPE boundary: LFPS, ordered sets,
                             scrambling, SKP insertion/removal, framing, a link-command lane
                             (per-symbol work never reaches Python); ``pipe_receiver.sv`` is its
                             receive half
:mod:`.pipe`                 its Python side: framed packets in, captured packets out
:mod:`.training`             the host port's link training, Polling.LFPS to U0
:mod:`.framing`              header packets, link commands, data payloads, CRC-5/16/32
:mod:`.link`                 U0 link layer: sequence numbers, header credits, LBAD/LRTY
:mod:`.protocol`             transaction, data and timestamp packets; control transfers
:mod:`.controller`           xHCI model: bulk transfers by a USB3 host profile (its transfer
                             queue is ``busprobe.sim.transfer_engine``, shared with USB 2.0)
:mod:`.session`              power-up, enumeration, warm reset
:mod:`.scratch_top`          a stock LUNA SuperSpeed device with the same PIPE ports
"""
