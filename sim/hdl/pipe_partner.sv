// PIPE link partner: the far end of a SuperSpeed link (an xHCI root port and the wire), seen by
// the device at its PIPE interface the way LUNA's ECP5 SerDes PIPE presents it. 32 bits (four
// symbols) a cycle at 125 MHz, i.e. 5 GT/s after 8b/10b; symbol i of a word is bits [8i+7:8i].
//
// Why SystemVerilog: every 8 ns carries four symbols that must be scrambled, descrambled, framed
// and SKP-filtered; a Python await per cycle would cap the simulation far below what a 1 MiB
// transfer needs. Here all per-symbol work runs inside the simulator; the Python host model
// (busprobe.sim.usb3.pipe) hands over whole framed packets and reads whole captured packets.
//
// What the PHY side does (ECP5SerDesPIPE semantics, LUNA interface/serdes_phy/ecp5.py):
//   phy_status   high while the device holds phy_reset and PHY_READY_CYCLES after (~tx_ready)
//   rx_elec_idle low only while the partner drives an LFPS burst (its LFPS detector's output)
//   rx_valid     high while the partner transmits symbols; rx_status always 0 (no 8b/10b errors)
//   device LFPS  tx_elec_idle & tx_detrx_lpbk (LUNA's LFPS generator): bursts counted
//
// Host -> device stream (rx_data/rx_datak), chosen by host_mode:
//   MODE_QUIET   electrical idle
//   MODE_OS      the ordered set in os_word/os_k (os_words long), repeated; os_sent counts sets
//   MODE_LINK    queued blocks (framed packets from the host model, 4-symbol multiples), each not
//                before its start_at cycle; logical idle (IDL) between them
// In every mode but MODE_QUIET a SKP ordered set is owed every SKP_INTERVAL symbols (USB 3.2
// §6.4.3) and sent, two sets as one word, at an ordered-set or block boundary; SKP symbols do not
// advance the scrambler. Data symbols of blocks and idle are scrambled (LFSR x^16+x^5+x^4+x^3+1,
// seed 0xFFFF, reset by COM, advanced by every non-SKP symbol: USB 3.2 §6.4.1, Appendix B);
// ordered sets are sent unscrambled.
//
// Device -> host stream (tx_data/tx_datak): SKP symbols removed, data symbols outside ordered sets
// descrambled, then framed. Header packets (SHP SHP SHP EPF + 16), link commands (SLC SLC SLC EPF
// + 4) and data packet payloads (SDP SDP SDP EPF ... END END END EPF, or EDB EDB EDB EPF when
// nullified) are pushed into a capture FIFO the host model pops one entry at a time. Three
// ordered-set recognisers (patterns from the host model) count consecutive complete sets.
//
// Model-side ports (direction as seen from this module)
//   host_mode [1:0], os_word [8*32], os_k [8*4], os_words [3:0]   what the partner transmits
//   lfps_mode [1:0], lfps_burst, lfps_period   LFPS: 0 none, 1 repeated bursts, 2 held (warm reset)
//   lfps_sent [31:0]                   LFPS bursts the partner has completed
//   blk_symbols [8*MAX_BLOCK], blk_k [MAX_BLOCK], blk_len, blk_start_at, blk_request
//                                      queue one block (blk_request incremented by the model)
//   blk_done [31:0], blk_free [7:0]    blocks fully sent; free queue slots
//   blk_taken [31:0], cmd_taken [31:0] the last blk_request / cmd_request taken: the model
//                                      writes the next request only after the partner took
//                                      this one (a write landing in the same time step as a
//                                      clock edge would otherwise replace an untaken request)
//   blk_last_end [63:0]                cycle the last block's final symbol went out
//   cmd_symbols [64], cmd_k, cmd_request, cmd_done, cmd_free
//                                      the link-command lane: 8-symbol link commands, sent at
//                                      the next packet boundary ahead of queued blocks (a link
//                                      layer answers a header at once, USB 3.2 §7.2.4.1)
//   flush                              while high: every queued block and command is dropped
//                                      (a port reset discards what its link layer had queued)
//   rec_word [3*8*32], rec_k [3*8*4], rec_mask [3*8*32], rec_words [3*4]   recognisers
//   rec_run [3*16], rec_total [3*32]   consecutive / total complete sets seen per recogniser
//   rx_idle_run [15:0]                 consecutive descrambled IDL symbols from the device
//   dev_lfps_bursts [31:0]             LFPS bursts the device has sent
//   cap_* / cap_pop                    capture FIFO (pipe_receiver.sv); cap_pop drops the head
//   symbols_in/out [63:0]              symbols (SKP included) sent to / received from the device
//   skp_out [63:0]                     SKP symbols received from the device (two per ordered set)
//   cycle [63:0]                       free-running cycle counter
module pipe_partner #(
    parameter int MAX_BLOCK = 1088,
    parameter int BLOCKS = 8,
    parameter int MAX_CAPTURE = 1040,
    parameter int CAPTURES = 64,
    parameter int SKP_INTERVAL = 354,  // set from protocol.usb3.SKP_INTERVAL_SYMBOLS
    parameter int PHY_READY_CYCLES = 16,
    parameter logic [7:0] K_SKP = 8'h3C, K_COM = 8'hBC, K_SHP = 8'hFB, K_SLC = 8'hFE,
    parameter logic [7:0] K_SDP = 8'h5C, K_END = 8'hFD, K_EDB = 8'h7C, K_EPF = 8'hF7
) (
    input  logic                        clk,
    input  logic                        rst,
    // PIPE, PHY side
    output logic [31:0]                 rx_data,
    output logic [3:0]                  rx_datak,
    output logic                        rx_valid,
    output logic [2:0]                  rx_status,
    output logic                        phy_status,
    output logic                        rx_elec_idle,
    output logic                        power_present,
    input  logic [31:0]                 tx_data,
    input  logic [3:0]                  tx_datak,
    input  logic                        phy_reset,
    input  logic                        tx_elec_idle,
    input  logic                        tx_detrx_lpbk,
    // model side
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
    output logic [31:0]                 blk_taken,
    output logic [63:0]                 blk_last_end,
    input  logic [63:0]                 cmd_symbols,
    input  logic [7:0]                  cmd_k,
    input  logic [31:0]                 cmd_request,
    output logic [31:0]                 cmd_done,
    output logic [4:0]                  cmd_free,
    output logic [31:0]                 cmd_taken,
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
    output logic [63:0]                 skp_out,
    output logic [63:0]                 cycle
);
    localparam logic [1:0] MODE_QUIET = 2'd0, MODE_OS = 2'd1, MODE_LINK = 2'd2;
    localparam logic [2:0] CAP_HEADER = 3'd1, CAP_COMMAND = 3'd2, CAP_DATA = 3'd3,
                           CAP_DATA_NULLIFIED = 3'd4;

    // ---- scrambler: one step of 8 bits (USB 3.2 Appendix B, Galois form, output bit = lfsr[15])
    function automatic logic [23:0] scramble(input logic [15:0] lfsr, input logic [7:0] value);
        logic [15:0] state;
        logic [7:0] out;
        state = lfsr;
        for (int bit_i = 0; bit_i < 8; bit_i++) begin
            out[bit_i] = value[bit_i] ^ state[15];
            state = state[15] ? ({state[14:0], 1'b0} ^ 16'h0039) : {state[14:0], 1'b0};
        end
        return {state, out};
    endfunction

    always_ff @(posedge clk) cycle <= rst ? 64'd0 : cycle + 64'd1;

    // ---- PHY status: reset handshake as the ECP5 SerDes shows it (phy_status = ~tx_ready)
    logic [7:0] ready_count;
    always_ff @(posedge clk) begin
        if (rst || phy_reset) ready_count <= 0;
        else if (ready_count != PHY_READY_CYCLES[7:0]) ready_count <= ready_count + 1;
    end
    assign phy_status = ready_count != PHY_READY_CYCLES[7:0];
    assign rx_status = 3'd0;
    assign power_present = vbus;

    // ---- LFPS, partner -> device
    logic [31:0] lfps_phase;
    always_ff @(posedge clk) begin
        if (rst || lfps_mode == 2'd0) begin
            lfps_phase <= 0;
        end else if (lfps_mode == 2'd1) begin
            lfps_phase <= (lfps_phase + 1 == lfps_period) ? 0 : lfps_phase + 1;
            if (lfps_phase + 1 == lfps_burst) lfps_sent <= lfps_sent + 1;
        end
        if (rst) lfps_sent <= 0;
    end
    assign rx_elec_idle = !(lfps_mode == 2'd2 || (lfps_mode == 2'd1 && lfps_phase < lfps_burst));

    // ---- LFPS, device -> partner
    logic dev_lfps_q;
    always_ff @(posedge clk) begin
        dev_lfps_q <= tx_elec_idle & tx_detrx_lpbk;
        if (rst) dev_lfps_bursts <= 0;
        else if ((tx_elec_idle & tx_detrx_lpbk) && !dev_lfps_q) dev_lfps_bursts <= dev_lfps_bursts + 1;
    end

    // ---- block queue, model -> partner
    logic [8:0]  blk_mem [BLOCKS][MAX_BLOCK];
    logic [15:0] blk_mem_len [BLOCKS];
    logic [63:0] blk_mem_at [BLOCKS];
    logic [31:0] blk_seen;
    logic [7:0]  blk_wr, blk_rd, blk_used;
    logic [15:0] blk_pos;
    logic        blk_active;
    // ---- link-command lane
    logic [71:0] cmd_mem [16];
    logic [31:0] cmd_seen;
    logic [4:0]  cmd_wr, cmd_rd;
    logic        cmd_half;  // the second word of a command goes out next

    // ---- transmit word selection
    logic [15:0] tx_lfsr;
    logic [15:0] skp_symbols;  // symbols since the last SKP owed
    logic [3:0]  skp_owed;     // SKP ordered sets owed
    logic [3:0]  os_pos;
    always_ff @(posedge clk) begin
        logic [31:0] word;
        logic [3:0]  kmask;
        logic        is_skp, pop_block, start_block, take_cmd, boundary;
        logic [23:0] step;
        logic [15:0] lfsr;
        is_skp = 0; pop_block = 0; start_block = 0; take_cmd = 0;
        word = 0; kmask = 0;
        if (rst) begin
            blk_seen <= blk_request; blk_wr <= 0; blk_rd <= 0; blk_used <= 0; blk_done <= 0;
            blk_active <= 0; blk_pos <= 0; tx_lfsr <= 16'hFFFF; skp_symbols <= 0; skp_owed <= 0;
            os_pos <= 0; os_sent <= 0; symbols_in <= 0; blk_last_end <= 0;
            rx_valid <= 0; rx_data <= 0; rx_datak <= 0;
            cmd_seen <= cmd_request; cmd_wr <= 0; cmd_rd <= 0; cmd_half <= 0; cmd_done <= 0;
        end else begin
            if (cmd_request != cmd_seen) begin
                cmd_mem[cmd_wr[3:0]] <= {cmd_k, cmd_symbols};
                cmd_wr <= cmd_wr + 1;
                cmd_seen <= cmd_request;
            end
            // Take a newly queued block (the model checks blk_free first).
            if (blk_request != blk_seen) begin
                for (int i = 0; i < MAX_BLOCK; i++)
                    blk_mem[blk_wr[2:0]][i] <= {blk_k[i], blk_symbols[8*i +: 8]};
                blk_mem_len[blk_wr[2:0]] <= blk_len;
                blk_mem_at[blk_wr[2:0]] <= blk_start_at;
                blk_wr <= blk_wr + 1;
                blk_seen <= blk_request;
            end
            // A boundary (no block, command or ordered set under way): SKPs first, then a link
            // command, then the next block.
            boundary = !blk_active && !cmd_half && os_pos == 0;
            if (host_mode != MODE_QUIET && boundary && skp_owed >= 2) begin
                is_skp = 1;
            end else if (host_mode == MODE_OS) begin
                word = os_word[32*os_pos +: 32];
                kmask = os_k[4*os_pos +: 4];
            end else if (host_mode == MODE_LINK && (cmd_half || (boundary && cmd_wr != cmd_rd))) begin
                take_cmd = 1;
                word = cmd_half ? cmd_mem[cmd_rd[3:0]][63:32] : cmd_mem[cmd_rd[3:0]][31:0];
                kmask = cmd_half ? cmd_mem[cmd_rd[3:0]][71:68] : cmd_mem[cmd_rd[3:0]][67:64];
            end else if (host_mode == MODE_LINK) begin
                start_block = !blk_active && blk_used != 0 && cycle >= blk_mem_at[blk_rd[2:0]];
                if (blk_active || start_block) begin
                    for (int lane = 0; lane < 4; lane++) begin
                        word[8*lane +: 8] = blk_mem[blk_rd[2:0]][blk_pos + lane][7:0];
                        kmask[lane] = blk_mem[blk_rd[2:0]][blk_pos + lane][8];
                    end
                    pop_block = blk_pos + 4 >= blk_mem_len[blk_rd[2:0]];
                end
            end
            rx_valid <= host_mode != MODE_QUIET;
            if (host_mode == MODE_QUIET) begin
                rx_data <= 0; rx_datak <= 0;
            end else if (is_skp) begin
                rx_data <= {4{K_SKP}}; rx_datak <= 4'hF;
                skp_owed <= skp_owed - 2;
                symbols_in <= symbols_in + 4;
            end else begin
                // Scramble data symbols outside ordered sets; COM resets, every symbol advances.
                lfsr = tx_lfsr;
                for (int lane = 0; lane < 4; lane++) begin
                    step = scramble(lfsr, word[8*lane +: 8]);
                    if (kmask[lane] && word[8*lane +: 8] == K_COM) lfsr = 16'hFFFF;
                    else begin
                        if (!kmask[lane] && host_mode == MODE_LINK) word[8*lane +: 8] = step[7:0];
                        lfsr = step[23:8];
                    end
                end
                tx_lfsr <= lfsr;
                rx_data <= word; rx_datak <= kmask;
                symbols_in <= symbols_in + 4;
                if (skp_symbols + 4 >= SKP_INTERVAL[15:0]) begin
                    skp_symbols <= skp_symbols + 4 - SKP_INTERVAL[15:0];
                    if (skp_owed != 4'hF) skp_owed <= skp_owed + 1;
                end else skp_symbols <= skp_symbols + 4;
                if (host_mode == MODE_OS) begin
                    if (os_pos + 1 == os_words) begin os_pos <= 0; os_sent <= os_sent + 1; end
                    else os_pos <= os_pos + 1;
                end else os_pos <= 0;
                if (take_cmd) begin
                    cmd_half <= !cmd_half;
                    if (cmd_half) begin cmd_rd <= cmd_rd + 1; cmd_done <= cmd_done + 1; end
                end else if (pop_block) begin
                    blk_active <= 0; blk_pos <= 0; blk_rd <= blk_rd + 1; blk_done <= blk_done + 1;
                    blk_last_end <= cycle;
                end else if (blk_active || start_block) begin
                    blk_active <= 1; blk_pos <= blk_pos + 4;
                end
            end
            blk_used <= blk_used + (blk_request != blk_seen ? 8'd1 : 8'd0)
                        - (!is_skp && pop_block ? 8'd1 : 8'd0);
            if (flush) begin
                blk_rd <= blk_wr; blk_used <= 0; blk_active <= 0; blk_pos <= 0;
                cmd_rd <= cmd_wr; cmd_half <= 0;
            end
        end
    end
    assign blk_free = BLOCKS[7:0] - blk_used - (blk_request != blk_seen ? 8'd1 : 8'd0);
    assign blk_taken = blk_seen;
    assign cmd_taken = cmd_seen;
    assign cmd_free = 5'd16 - (cmd_wr - cmd_rd) - (cmd_request != cmd_seen ? 5'd1 : 5'd0);

    pipe_receiver #(.MAX_CAPTURE(MAX_CAPTURE), .CAPTURES(CAPTURES), .K_SKP(K_SKP),
                    .K_COM(K_COM), .K_SHP(K_SHP), .K_SLC(K_SLC), .K_SDP(K_SDP), .K_END(K_END),
                    .K_EDB(K_EDB), .K_EPF(K_EPF)) receiver (.*);
endmodule
