// Receive half of the PIPE link partner (pipe_partner.sv): the device's transmit stream, four
// symbols a cycle, SKP-filtered, descrambled, framed into a capture FIFO, ordered sets counted.
//
// Ordered sets are recognised on whole words, as LUNA sends them (its TS emitters and its SKP
// inserter both work a word at a time): a word whose first symbol is COM starts a set of 16
// (four COMs: TS1/TS2) or 32 (TSEQ) symbols, which are not descrambled. Partial SKP words are
// filtered symbol by symbol; the recognisers see only words without SKP.
//
// Capture FIFO: entries [cap_pop, cap_count) are pending; the head (cap_data, cap_len, cap_type,
// cap_start, cap_end) is shown once cap_index equals cap_pop. cap_start / cap_end are the cycles
// of the entry's first framing symbol and of its last symbol.
module pipe_receiver #(
    parameter int MAX_CAPTURE = 1040,
    parameter int CAPTURES = 64,
    parameter logic [7:0] K_SKP = 8'h3C, K_COM = 8'hBC, K_SHP = 8'hFB, K_SLC = 8'hFE,
    parameter logic [7:0] K_SDP = 8'h5C, K_END = 8'hFD, K_EDB = 8'h7C, K_EPF = 8'hF7
) (
    input  logic                        clk,
    input  logic                        rst,
    input  logic [31:0]                 tx_data,
    input  logic [3:0]                  tx_datak,
    input  logic                        tx_elec_idle,
    input  logic [3*8*32-1:0]           rec_word,
    input  logic [3*8*4-1:0]            rec_k,
    input  logic [3*8*32-1:0]           rec_mask,
    input  logic [3*4-1:0]              rec_words,
    output logic [3*16-1:0]             rec_run,
    output logic [3*32-1:0]             rec_total,
    output logic [15:0]                 rx_idle_run,
    output logic [8*MAX_CAPTURE-1:0]    cap_data,
    output logic [15:0]                 cap_len,
    output logic [2:0]                  cap_type,
    output logic [63:0]                 cap_start,
    output logic [63:0]                 cap_end,
    output logic [31:0]                 cap_count,
    output logic [31:0]                 cap_index,
    output logic                        cap_overflow,
    input  logic [31:0]                 cap_pop,
    output logic [63:0]                 symbols_out,
    output logic [63:0]                 skp_out,
    input  logic [63:0]                 cycle
);
    localparam logic [2:0] CAP_HEADER = 3'd1, CAP_COMMAND = 3'd2, CAP_DATA = 3'd3,
                           CAP_DATA_NULLIFIED = 3'd4;
    localparam logic [1:0] HUNT = 2'd0, IN_HEADER = 2'd1, IN_COMMAND = 2'd2, IN_DATA = 2'd3;

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

    function automatic logic framing(input logic [26:0] history, input logic [8:0] current,
                                     input logic [7:0] start);
        return history == {3{1'b1, start}} && current == {1'b1, K_EPF};
    endfunction

    logic [8*MAX_CAPTURE-1:0] cap_mem [CAPTURES];
    logic [15:0] cap_mem_len [CAPTURES];
    logic [2:0]  cap_mem_type [CAPTURES];
    logic [63:0] cap_mem_start [CAPTURES];
    logic [63:0] cap_mem_end [CAPTURES];

    logic [15:0] rx_lfsr;
    logic [3:0]  os_left;
    logic [26:0] history;   // the last three symbols, {k, value}, newest in the low bits
    logic [1:0]  state;
    logic [15:0] count;
    logic [63:0] started;
    logic [3:0]  rec_pos [3];

    always_ff @(posedge clk) begin
        logic [8:0]  sym;
        logic [23:0] step;
        logic [15:0] lfsr;
        logic [26:0] hist;
        logic [1:0]  st;
        logic [15:0] n;
        logic        in_os, push, all_skp, matched;
        logic [2:0]  push_type;
        logic [15:0] push_len;
        logic [31:0] slot;
        logic [63:0] first;
        if (rst) begin
            rx_lfsr <= 16'hFFFF; os_left <= 0; history <= 0; state <= HUNT; count <= 0;
            cap_count <= 0; cap_overflow <= 0; symbols_out <= 0; skp_out <= 0; rx_idle_run <= 0;
            rec_run <= 0; rec_total <= 0; cap_index <= 32'hFFFF_FFFF;
            for (int r = 0; r < 3; r++) rec_pos[r] <= 0;
        end else if (!tx_elec_idle) begin
            symbols_out <= symbols_out + 4;
            skp_out <= skp_out + 64'(tx_datak[0] && tx_data[7:0] == K_SKP)
                       + 64'(tx_datak[1] && tx_data[15:8] == K_SKP)
                       + 64'(tx_datak[2] && tx_data[23:16] == K_SKP)
                       + 64'(tx_datak[3] && tx_data[31:24] == K_SKP);
            all_skp = tx_datak == 4'hF && tx_data == {4{K_SKP}};
            // Ordered-set recognisers: whole words, SKP words skipped.
            if (!all_skp) begin
                for (int r = 0; r < 3; r++) begin
                    logic [3:0] at;
                    at = rec_pos[r];
                    matched = ((tx_data ^ rec_word[256*r + 32*at +: 32]) & rec_mask[256*r + 32*at +: 32]) == 0
                              && tx_datak == rec_k[32*r + 4*at +: 4];
                    if (!matched && at != 0) begin  // a set may start where another broke off
                        at = 0;
                        matched = ((tx_data ^ rec_word[256*r +: 32]) & rec_mask[256*r +: 32]) == 0
                                  && tx_datak == rec_k[32*r +: 4];
                        rec_run[16*r +: 16] <= 0;
                    end
                    if (!matched) begin
                        rec_pos[r] <= 0;
                        rec_run[16*r +: 16] <= 0;
                    end else if (at + 1 == rec_words[4*r +: 4]) begin
                        rec_pos[r] <= 0;
                        if (rec_run[16*r +: 16] != 16'hFFFF) rec_run[16*r +: 16] <= rec_run[16*r +: 16] + 1;
                        rec_total[32*r +: 32] <= rec_total[32*r +: 32] + 1;
                    end else rec_pos[r] <= at + 1;
                end
            end
            // Ordered sets are not scrambled: mark their words.
            in_os = 0;
            if (!all_skp) begin
                if (tx_datak[0] && tx_data[7:0] == K_COM) begin
                    in_os = 1;
                    os_left <= (tx_datak == 4'hF && tx_data == {4{K_COM}}) ? 4'd3 : 4'd7;
                end else if (os_left != 0) begin
                    in_os = 1;
                    os_left <= os_left - 1;
                end
            end
            lfsr = rx_lfsr; hist = history; st = state; n = count; first = started;
            push = 0; push_type = 0; push_len = 0;
            slot = cap_count % CAPTURES;
            for (int lane = 0; lane < 4; lane++) begin
                sym = {tx_datak[lane], tx_data[8*lane +: 8]};
                if (sym != {1'b1, K_SKP}) begin
                    step = scramble(lfsr, sym[7:0]);
                    if (sym == {1'b1, K_COM}) lfsr = 16'hFFFF;
                    else begin
                        if (!sym[8] && !in_os) sym[7:0] = step[7:0];
                        lfsr = step[23:8];
                    end
                    if (!sym[8] && !in_os && sym[7:0] == 8'h00) begin
                        if (rx_idle_run != 16'hFFFF) rx_idle_run <= rx_idle_run + 1;
                    end else rx_idle_run <= 0;
                    // Framing.
                    case (st)
                        HUNT: begin
                            if (framing(hist, sym, K_SHP)) begin st = IN_HEADER; n = 0; first = cycle; end
                            else if (framing(hist, sym, K_SLC)) begin st = IN_COMMAND; n = 0; first = cycle; end
                            else if (framing(hist, sym, K_SDP)) begin st = IN_DATA; n = 0; first = cycle; end
                        end
                        default: begin
                            if (n < MAX_CAPTURE[15:0]) cap_mem[slot][8*n +: 8] <= sym[7:0];
                            n = n + 1;
                            if (st == IN_HEADER && n == 16) begin
                                push = 1; push_type = CAP_HEADER; push_len = 16; st = HUNT;
                            end else if (st == IN_COMMAND && n == 4) begin
                                push = 1; push_type = CAP_COMMAND; push_len = 4; st = HUNT;
                            end else if (st == IN_DATA && (framing(hist, sym, K_END) || framing(hist, sym, K_EDB))) begin
                                push = 1; push_len = n - 4; st = HUNT;
                                push_type = framing(hist, sym, K_END) ? CAP_DATA : CAP_DATA_NULLIFIED;
                            end
                        end
                    endcase
                    hist = {hist[17:0], sym};
                end
            end
            rx_lfsr <= lfsr; history <= hist; state <= st; count <= n; started <= first;
            if (push) begin
                if (cap_count - cap_pop >= CAPTURES) cap_overflow <= 1;
                cap_mem_len[slot] <= push_len;
                cap_mem_type[slot] <= push_type;
                cap_mem_start[slot] <= first;
                cap_mem_end[slot] <= cycle;
                cap_count <= cap_count + 1;
            end
        end else begin
            state <= HUNT; history <= 0; os_left <= 0;
        end
        // Show the head entry (an entry written this edge is shown from the next one).
        if (!rst && cap_pop != cap_count && cap_index != cap_pop) begin
            cap_data <= cap_mem[cap_pop % CAPTURES];
            cap_len <= cap_mem_len[cap_pop % CAPTURES];
            cap_type <= cap_mem_type[cap_pop % CAPTURES];
            cap_start <= cap_mem_start[cap_pop % CAPTURES];
            cap_end <= cap_mem_end[cap_pop % CAPTURES];
            cap_index <= cap_pop;
        end
    end
endmodule
