// The beat-level half of the PCIe link model (busprobe.sim.pcie.tlp_stream): it hands the core
// whole TLPs beat by beat and collects the core's beats into whole TLPs, so the Python model
// wakes once per TLP instead of once per clock (issue 30: the per-clock wake-up was the
// simulation's cost). It does exactly what the Python loop it replaces did, at the same edges:
//
// * Core -> link (tx_*): sampled at the falling edge, whose values the next rising edge acts
//   on. tx_ready is driven there too: high while fewer than txq_buffer TLPs wait for the link
//   (txq_taken - txq_released; the model counts a TLP released when cocotbext-pcie has sent
//   it) and txq_pause is low. A beat is taken when tx_valid is high and the ready just driven
//   is; the TLP's last beat puts it in txq_dat/txq_be (beat k in bits [64k+63:64k]), its beat
//   count in txq_beats, and counts it in txq_taken, which the model waits on: it reads the TLP
//   in the same time step, before the next falling edge overwrites it.
// * Link -> core (rx_*): the model writes a TLP into rxq_* and counts it in rxq_pushed (one
//   waits at a time). It is loaded at a rising edge where no TLP is being handed over (or the
//   last beat of the one being handed is taken) and either one was, or this one already
//   waited, at the falling edge before: when the link was idle the Python loop only looked at
//   its queue at a rising edge after a falling edge. rxq_loaded counts loads (the model then
//   writes the next TLP), rxq_done the TLPs whose last beat the core took (their flow-control
//   credits return). rxq_pause, sampled at the rising edge, idles the stream for one cycle.
module tlp_bridge #(
    parameter int DW = 64,
    parameter int BW = 8,  // DW / 8: bits of tx_be/rx_be, one per byte
    // Longest packet either way: 4 DW header + 512-byte MPS, and 3 DWs of an overlong fault.
    parameter int MAX_BEATS = 72
) (
    input  logic                      clk,
    // the core's PHY pads (rx_*: TLPs to the core; tx_*: TLPs from it)
    output logic                      rx_valid,
    input  logic                      rx_ready,
    output logic                      rx_first,
    output logic                      rx_last,
    output logic [DW-1:0]             rx_dat,
    output logic [BW-1:0]           rx_be,
    input  logic                      tx_valid,
    output logic                      tx_ready,
    /* verilator lint_off UNUSEDSIGNAL */  // a TLP starts after the last one's last beat
    input  logic                      tx_first,
    /* verilator lint_on UNUSEDSIGNAL */
    input  logic                      tx_last,
    input  logic [DW-1:0]             tx_dat,
    input  logic [BW-1:0]           tx_be,
    // the model's side
    input  logic [MAX_BEATS*DW-1:0]   rxq_dat,
    input  logic [MAX_BEATS*BW-1:0] rxq_be,
    input  logic [7:0]                rxq_beats,
    input  logic [15:0]               rxq_pushed,
    output logic [15:0]               rxq_loaded,
    output logic [15:0]               rxq_done,
    input  logic                      rxq_pause,
    output logic [MAX_BEATS*DW-1:0]   txq_dat,
    output logic [MAX_BEATS*BW-1:0] txq_be,
    output logic [7:0]                txq_beats,
    output logic [15:0]               txq_taken,
    input  logic [15:0]               txq_released,
    input  logic [7:0]                txq_buffer,
    input  logic                      txq_pause
);
    logic [MAX_BEATS*DW-1:0]   cur_dat;
    logic [MAX_BEATS*BW-1:0] cur_be;
    logic [7:0]                cur_beats, cur_index, tx_index;
    logic                      cur_active, busy_at_fall;

    initial begin
        rx_valid = 1'b0; rx_first = 1'b0; rx_last = 1'b0; rx_dat = '0; rx_be = '0;
        rxq_loaded = '0; rxq_done = '0; cur_active = 1'b0; cur_index = '0; cur_beats = '0;
        busy_at_fall = 1'b0; tx_ready = 1'b0; txq_taken = '0; txq_beats = '0; tx_index = '0;
    end

    always @(negedge clk) begin : to_link
        logic want;
        want = 16'(txq_taken - txq_released) < {8'd0, txq_buffer} && !txq_pause;
        tx_ready <= want;
        if (want && tx_valid) begin
            if (tx_index == 8'(MAX_BEATS))
                $fatal(1, "tlp_bridge: the core sent a TLP longer than %0d beats", MAX_BEATS);
            txq_dat[tx_index*DW +: DW] <= tx_dat;
            txq_be[tx_index*BW +: BW] <= tx_be;
            if (tx_last) begin
                txq_beats <= tx_index + 8'd1;
                txq_taken <= txq_taken + 16'd1;
                tx_index <= '0;
            end else begin
                tx_index <= tx_index + 8'd1;
            end
        end
        busy_at_fall <= cur_active || rxq_pushed != rxq_loaded;
    end

    always @(posedge clk) begin : to_core
        logic active, load;
        logic [7:0] index, beats;
        active = cur_active;
        index = cur_index;
        if (rx_valid && rx_ready) begin
            if (index + 8'd1 == cur_beats) begin
                active = 1'b0;
                rxq_done <= rxq_done + 16'd1;
            end else begin
                index = index + 8'd1;
            end
        end
        load = !active && rxq_pushed != rxq_loaded && busy_at_fall;
        if (load) begin
            cur_dat <= rxq_dat;
            cur_be <= rxq_be;
            cur_beats <= rxq_beats;
            rxq_loaded <= rxq_loaded + 16'd1;
            active = 1'b1;
            index = '0;
        end
        beats = load ? rxq_beats : cur_beats;
        cur_active <= active;
        cur_index <= index;
        if (active && !rxq_pause) begin
            rx_valid <= 1'b1;
            rx_dat <= load ? rxq_dat[index*DW +: DW] : cur_dat[index*DW +: DW];
            rx_be <= load ? rxq_be[index*BW +: BW] : cur_be[index*BW +: BW];
            rx_first <= index == 8'd0;
            rx_last <= index + 8'd1 == beats;
        end else begin
            rx_valid <= 1'b0;
        end
    end
endmodule
