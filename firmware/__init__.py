"""The PCIe SoC's firmware sources (C), package data: ``busprobe.bitstream.firmware`` builds
them."""
