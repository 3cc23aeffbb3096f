"""A soft PCIe Gen1 x1 endpoint at the symbol level (issue 45, first slice).

One 8b/10b symbol a clock, packed ``{k, byte}`` as :mod:`busprobe.protocol.pcie_symbols` defines:
the LTSSM with its ordered-set transmitter and receiver, SKP insertion and removal, the data
link layer's framing (:mod:`.framer`, :mod:`.deframer`) — assembled in :mod:`.soft_link` — and
the data link layer itself (:mod:`.fc_init`, :mod:`.ack_nak`, :mod:`.replay_buffer`), assembled
in :mod:`.data_link`; and the first part of the transaction layer, configuration space
(:mod:`.config_space`). ``docs/DESIGN.md`` §3.10 says what is here, what is not yet, and
how it was tested.
"""
