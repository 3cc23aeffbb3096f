"""Bitstream builds: board + design -> bitstream with timing, utilisation and build time.

ECP5 boards build here with the YoWASP tools from PyPI (:mod:`.ecp5`); Artix-7 PCIe targets are
generated with LiteX and built by Vivado when it is installed (:mod:`.pcie`).
"""
