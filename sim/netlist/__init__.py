"""Gate-level simulation: the netlist a bitstream is packed from, in the RTL's test benches.

``yosys_json`` reads yosys' JSON netlist, ``board_cut`` removes the pads and the PLL the RTL
simulation has no use for, ``verilog`` writes what is left as one module, ``cells`` names the
models every cell simulates with (yosys' own, busprobe's for the block RAMs), and ``usb2`` /
``usb3`` put a board design's netlist where the RTL simulation has its device.
"""
