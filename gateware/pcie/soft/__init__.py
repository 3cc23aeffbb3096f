"""A soft PCIe Gen1 x1 endpoint at the symbol level (issue 45, first slice).

Four 8b/10b symbols a clock, each packed ``{k, byte}`` as :mod:`busprobe.protocol.pcie_symbols`
defines: the LTSSM with its ordered-set transmitter and receiver, SKP insertion and the receive
aligner, the data link layer's framing (:mod:`.word_framer`, :mod:`.word_deframer`) — assembled
in :mod:`.soft_link` — and the data link layer itself (:mod:`.fc_init`, :mod:`.ack_nak`,
:mod:`.replay_buffer`), assembled in :mod:`.data_link`; and the transaction layer
(:mod:`.config_space`, :mod:`.tlp_router`, :mod:`.msi_request`). ``docs/DESIGN.md`` §3.10 says
what is here, what is not yet, and how it was tested.
"""
