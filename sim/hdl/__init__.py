"""HDL bus models (SystemVerilog) instantiated next to the device design in simulation tops."""
