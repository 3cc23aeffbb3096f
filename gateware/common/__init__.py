"""Bus-independent gateware: pattern generator and checker."""
