"""Bus-accurate simulation of busprobe gateware (cocotb + Verilator): busprobe.sim."""
