// Simulation top for USB 2.0: the device design (busprobe_usb2, or busprobe_usb2_stock with
// +define+DUT_MODULE=busprobe_usb2_stock) wired to the ULPI PHY model. Every port here belongs to
// the PHY's host-model side; see ulpi_phy.sv for their meaning.
`ifndef DUT_MODULE
`define DUT_MODULE busprobe_usb2
`endif

module usb2_sim_top #(
    parameter int MAX_BYTES = 520
) (
    input  logic                     clk,
    input  logic                     rst,
    input  logic [1:0]               host_linestate,
    input  logic [8*MAX_BYTES-1:0]   rx_data,
    input  logic [MAX_BYTES-1:0]     rx_stall,
    input  logic [15:0]              rx_len,
    input  logic [63:0]              rx_start_at,
    input  logic [31:0]              rx_request,
    output logic [31:0]              rx_count,
    output logic [63:0]              rx_end_cycle,
    output logic [8*MAX_BYTES-1:0]   tx_data,
    output logic [15:0]              tx_len,
    output logic [63:0]              tx_start_cycle,
    output logic [63:0]              tx_end_cycle,
    output logic [31:0]              tx_count,
    output logic                     tx_busy,
    output logic [15:0]              tx_stuffed,
    output logic [15:0]              tx_crc16,
    output logic [7:0]               func_ctrl,
    output logic                     dev_chirp,
    output logic [63:0]              cycle
);
    logic [7:0] ulpi_data_i, ulpi_data_o;
    logic ulpi_data_oe, ulpi_dir, ulpi_nxt, ulpi_stp, ulpi_rst;

    `DUT_MODULE dut (
        .clk(clk), .rst(rst),
        .ulpi_data_i(ulpi_data_i), .ulpi_data_o(ulpi_data_o), .ulpi_data_oe(ulpi_data_oe),
        .ulpi_dir(ulpi_dir), .ulpi_nxt(ulpi_nxt), .ulpi_stp(ulpi_stp), .ulpi_rst(ulpi_rst)
    );

    ulpi_phy #(.MAX_BYTES(MAX_BYTES)) phy (.*);
endmodule
