"""HDL bus models instantiated next to the device design in simulation tops (SystemVerilog)."""
