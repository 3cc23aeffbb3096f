"""The host <-> device contract.

Everything that crosses between the host tool, the gateware and the simulation models is defined
here exactly once and imported by all three: vendor request numbers, telemetry layouts and the data
patterns; also the PCI config-space layout (:mod:`.pci_config`) that the VFIO backend, the topology
walk and the simulation decode, and the soft PCIe endpoint's own config space
(:mod:`.pcie_config`). This is the bottom layer: it imports nothing else of busprobe, and only
the standard library (plus numpy, which the host needs anyway), so gateware elaboration and
the firmware header generator can import it without host extras.
"""
