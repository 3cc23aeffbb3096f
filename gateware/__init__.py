"""busprobe gateware (Amaranth / LiteX), importable as busprobe.gateware."""
