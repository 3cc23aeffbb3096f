// Simulation top for USB 3.0 SuperSpeed: the device design (busprobe_usb3, or usb3_stock with
// +define+DUT_MODULE=usb3_stock) wired at its
// PIPE interface to the link partner model. Every port here belongs to the partner's model side
// (see pipe_partner.sv), plus the device's link_trained (LTSSM in U0).
`ifndef DUT_MODULE
`define DUT_MODULE busprobe_usb3
`endif

module usb3_sim_top #(
    parameter int MAX_BLOCK = 1088,
    parameter int MAX_CAPTURE = 1040
) (
    input  logic                        clk,
    input  logic                        rst,
    input  logic                        vbus,
    input  logic [1:0]                  host_mode,
    input  logic [8*32-1:0]             os_word,
    input  logic [8*4-1:0]              os_k,
    input  logic [3:0]                  os_words,
    output logic [31:0]                 os_sent,
    input  logic [1:0]                  lfps_mode,
    input  logic [31:0]                 lfps_burst,
    input  logic [31:0]                 lfps_period,
    output logic [31:0]                 lfps_sent,
    input  logic [8*MAX_BLOCK-1:0]      blk_symbols,
    input  logic [MAX_BLOCK-1:0]        blk_k,
    input  logic [15:0]                 blk_len,
    input  logic [63:0]                 blk_start_at,
    input  logic [31:0]                 blk_request,
    output logic [31:0]                 blk_done,
    output logic [7:0]                  blk_free,
    output logic [63:0]                 blk_last_end,
    input  logic [63:0]                 cmd_symbols,
    input  logic [7:0]                  cmd_k,
    input  logic [31:0]                 cmd_request,
    output logic [31:0]                 cmd_done,
    output logic [4:0]                  cmd_free,
    input  logic                        flush,
    input  logic [3*8*32-1:0]           rec_word,
    input  logic [3*8*4-1:0]            rec_k,
    input  logic [3*8*32-1:0]           rec_mask,
    input  logic [3*4-1:0]              rec_words,
    output logic [3*16-1:0]             rec_run,
    output logic [3*32-1:0]             rec_total,
    output logic [15:0]                 rx_idle_run,
    output logic [31:0]                 dev_lfps_bursts,
    output logic [8*MAX_CAPTURE-1:0]    cap_data,
    output logic [15:0]                 cap_len,
    output logic [2:0]                  cap_type,
    output logic [63:0]                 cap_start,
    output logic [63:0]                 cap_end,
    output logic [31:0]                 cap_count,
    output logic [31:0]                 cap_index,
    output logic                        cap_overflow,
    input  logic [31:0]                 cap_pop,
    output logic [63:0]                 symbols_in,
    output logic [63:0]                 symbols_out,
    output logic [63:0]                 cycle,
    output logic                        link_trained,
    output logic                        link_in_reset,
    output logic [7:0]                  configuration
);
    logic [31:0] rx_data, tx_data;
    logic [3:0]  rx_datak, tx_datak;
    logic [2:0]  rx_status;
    logic [1:0]  power_down;
    logic rx_valid, phy_status, rx_elec_idle, power_present, phy_reset, tx_elec_idle;
    logic tx_detrx_lpbk, rx_polarity, rx_termination;

    `DUT_MODULE dut (
        .clk(clk), .rst(rst),
        .pipe_tx_data(tx_data), .pipe_tx_datak(tx_datak), .pipe_rx_data(rx_data),
        .pipe_rx_datak(rx_datak), .pipe_rx_valid(rx_valid), .pipe_rx_status(rx_status),
        .pipe_phy_status(phy_status), .pipe_rx_elec_idle(rx_elec_idle),
        .pipe_power_present(power_present), .pipe_reset(phy_reset),
        .pipe_power_down(power_down), .pipe_tx_elec_idle(tx_elec_idle),
        .pipe_tx_detrx_lpbk(tx_detrx_lpbk), .pipe_rx_polarity(rx_polarity),
        .pipe_rx_termination(rx_termination), .link_trained(link_trained)
`ifndef DUT_STOCK
        , .link_in_reset(link_in_reset), .configuration(configuration)
`endif
    );
`ifdef DUT_STOCK
    assign link_in_reset = 0;
    assign configuration = 0;
`endif

    // The K symbols come from LUNA's definitions (busprobe.sim.usb3.simulator_build passes them).
    pipe_partner #(.MAX_BLOCK(MAX_BLOCK), .MAX_CAPTURE(MAX_CAPTURE),
                   .K_SKP(`K_SKP), .K_COM(`K_COM), .K_SHP(`K_SHP), .K_SLC(`K_SLC),
                   .K_SDP(`K_SDP), .K_END(`K_END), .K_EDB(`K_EDB), .K_EPF(`K_EPF)) partner (.*);
endmodule
