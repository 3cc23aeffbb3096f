"""A symbol-level root port: the link partner the soft PCIe endpoint trains and talks with.

Pure Python, one symbol in and one out per step, built on the contract's reference functions
(:mod:`busprobe.protocol.pcie_symbols`, :mod:`busprobe.protocol.pcie_dll`), so the same partner
can be driven from Amaranth's simulator (:mod:`.amaranth_bench`) or from cocotb.
"""
