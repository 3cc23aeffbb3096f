"""Bus-accurate simulation of busprobe's gateware (cocotb + Verilator), importable as busprobe.sim."""
