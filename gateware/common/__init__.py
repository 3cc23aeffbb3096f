"""Bus-independent gateware: pattern generator and checker, Yosys set-up."""
