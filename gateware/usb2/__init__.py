"""USB 2.0 high-speed gateware (LUNA on ULPI).

``device.Usb2ProbeDevice``       the always-ready busprobe device (board and simulation)
``stock.StockUsb2Device``         LUNA's stock stream endpoints, the benchmark's reference
``sim_top.generate_verilog``      either design as Verilog with the ULPI simulation ports
``in_endpoint``/``out_endpoint``  EP1 IN pattern source, EP2 OUT sink
``request_handler``/``telemetry`` vendor requests and counters of :mod:`busprobe.protocol.usb2`
"""
