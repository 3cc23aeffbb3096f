"""USB 3.0 SuperSpeed simulation: the device gateware behind a PIPE-level link partner.

Layers, bottom up:

``sim/hdl/pipe_partner.sv``  the link partner at the PIPE boundary: LFPS, ordered sets,
                             scrambling, SKP insertion/removal, framing (per-symbol work
                             never reaches Python); ``pipe_receiver.sv`` is its receive half
:mod:`.pipe`                 its Python side: framed packets in, captured packets out
:mod:`.training`             the host port's link training, Polling.LFPS to U0
:mod:`.scratch_top`          a stock LUNA SuperSpeed device to test the model against
"""
