// Testbench of the SerDes crossing (gateware/usb3/serdes_crossing.py, module serdes_crossing):
// its two clocks free-running, the SerDes side's off its nominal 250 MHz by a chosen offset and
// down-spread, a symbol stream each way with USB 3.0's SKP schedule, every symbol checked.
//
// Why SystemVerilog: a run pushes a million symbols each way through two clocks that never line
// up; an await per edge in Python would cost minutes. Clocks, sources, checkers and counters run
// here (Verilator --timing, real-valued delays at 1 fs precision); the cocotb test sets a run up,
// waits for done and reads the counters.
//
// Clocks: ss 125 MHz exactly; pclk = 250 MHz x (1 + offset_ppb / 1e9) x (1 - spread_ppm / 1e6 x
// tri(t)), tri a triangle 0..1..0 over spread_period_ns (SSC's down-spread, USB 3.0 §6.5.4), its
// period set anew every cycle.
//
// Streams: a symbol is {K flag, 8 data bits}. Data symbols come from a 16-bit LFSR (one in eight
// a K symbol, never SKP's code), in packets of 1..1024 symbols; a SKP ordered set is owed every
// 354 data symbols and two are sent (4 SKP symbols) between packets, as the host's partner model
// does. Receive (SerDes -> MAC) is symbol by symbol, so SKPs land at any alignment; transmit
// (MAC -> SerDes) sends whole words, SKPs as an all-SKP word, as LUNA's transmitter does. Each
// checker runs the same LFSR and compares every non-SKP symbol, so a lost, repeated or
// reordered symbol is an error. Before `run` both sources send SKPs only.
//
// Sequence after reset falls: the DUT's ss reset is held 16 cycles; the checkers arm at ss
// cycle 400 (the FIFOs have settled); the sources start at 500; done when both checkers have
// seen `symbols` data symbols, or at the timeout (done with the counts short).
`timescale 1ps/1fs

module crossing_source #(
    parameter int LANES = 2,
    parameter bit WORD_SKP = 0,
    parameter logic [7:0] K_SKP = 8'h3C
) (
    input  logic                 clk,
    input  logic                 reset,
    input  logic                 run,
    input  logic [31:0]          limit,
    output logic [9*LANES-1:0]   out,
    output logic [31:0]          sent,
    output logic [31:0]          skp_sent
);
    localparam logic [8:0] SKP = {1'b1, K_SKP};
    logic [15:0] data_lfsr, len_lfsr;
    int packet_left, since_skp, owed, skp_left;

    function automatic logic [15:0] step(input logic [15:0] s);
        return s[0] ? ((s >> 1) ^ 16'hB400) : (s >> 1);
    endfunction

    function automatic logic [8:0] data_symbol(input logic [15:0] s);
        logic [8:0] symbol = {s[15:13] == 3'b000, s[7:0]};
        return symbol == SKP ? symbol ^ 9'h001 : symbol;
    endfunction

    always_ff @(posedge clk) begin
        if (reset) begin
            data_lfsr <= 16'hACE1; len_lfsr <= 16'h1D2B;
            packet_left <= 0; since_skp <= 0; owed <= 0; skp_left <= 0;
            sent <= 0; skp_sent <= 0; out <= {LANES{SKP}};
        end else begin
            automatic logic [15:0] d = data_lfsr, l = len_lfsr;
            automatic int left = packet_left, since = since_skp, o = owed, skps = skp_left;
            automatic int n = sent, k = skp_sent;
            automatic logic [9*LANES-1:0] word;
            if (WORD_SKP) begin
                if (!run || n >= limit || (left == 0 && o >= 2)) begin
                    word = {LANES{SKP}}; k += LANES;
                    if (run && n < limit) o -= 2;
                end else begin
                    if (left == 0) begin left = 1 + l[7:0]; l = step(l); end
                    for (int i = 0; i < LANES; i++) begin
                        word[9*i +: 9] = data_symbol(d); d = step(d); n++;
                        if (++since == 354) begin since = 0; o++; end
                    end
                    left--;
                end
            end else begin
                for (int i = 0; i < LANES; i++) begin
                    if (skps == 0 && run && n < limit && left == 0 && o >= 2) begin
                        skps = 4; o -= 2;
                    end
                    if (skps > 0 || !run || n >= limit) begin
                        word[9*i +: 9] = SKP; k++;
                        if (skps > 0) skps--;
                    end else begin
                        if (left == 0) begin left = 1 + l[9:0]; l = step(l); end
                        word[9*i +: 9] = data_symbol(d); d = step(d); n++; left--;
                        if (++since == 354) begin since = 0; o++; end
                    end
                end
            end
            out <= word;
            data_lfsr <= d; len_lfsr <= l; packet_left <= left; since_skp <= since;
            owed <= o; skp_left <= skps; sent <= n; skp_sent <= k;
        end
    end
endmodule

module crossing_checker #(
    parameter int LANES = 2,
    parameter logic [7:0] K_SKP = 8'h3C
) (
    input  logic                 clk,
    input  logic                 reset,
    input  logic                 armed,
    input  logic [9*LANES-1:0]   in,
    output logic [31:0]          received,
    output logic [31:0]          errors,
    output logic [31:0]          skp_received
);
    localparam logic [8:0] SKP = {1'b1, K_SKP};
    logic [15:0] expect_lfsr;

    function automatic logic [15:0] step(input logic [15:0] s);
        return s[0] ? ((s >> 1) ^ 16'hB400) : (s >> 1);
    endfunction

    function automatic logic [8:0] data_symbol(input logic [15:0] s);
        logic [8:0] symbol = {s[15:13] == 3'b000, s[7:0]};
        return symbol == SKP ? symbol ^ 9'h001 : symbol;
    endfunction

    always_ff @(posedge clk) begin
        if (reset) begin
            expect_lfsr <= 16'hACE1; received <= 0; errors <= 0; skp_received <= 0;
        end else if (armed) begin
            automatic logic [15:0] e = expect_lfsr;
            automatic int n = received, bad = errors, k = skp_received;
            for (int i = 0; i < LANES; i++) begin
                if (in[9*i +: 9] == SKP) k++;
                else begin
                    if (in[9*i +: 9] != data_symbol(e)) bad++;
                    e = step(e); n++;
                end
            end
            expect_lfsr <= e; received <= n; errors <= bad; skp_received <= k;
        end
    end
endmodule

module serdes_crossing_tb (
    input  logic               reset,
    input  logic [31:0]        symbols,
    input  logic signed [31:0] offset_ppb,
    input  logic [31:0]        spread_ppm,
    input  logic [31:0]        spread_period_ns,
    input  logic [31:0]        timeout_cycles,
    output logic               done,
    output logic [31:0]        rx_sent, rx_received, rx_errors, rx_skp_sent, rx_skp_received,
    output logic [31:0]        tx_sent, tx_received, tx_errors, tx_skp_sent, tx_skp_received,
    output logic [31:0]        rx_added, rx_removed, rx_recentred,  // pairs; words on tx
    output logic [31:0]        tx_added, tx_removed, tx_recentred,
    output logic [7:0]         rx_fill_min, rx_fill_max, tx_fill_min, tx_fill_max,
    output logic [7:0]         rx_fill, tx_fill,
    output logic [31:0]        ss_cycles
);
    localparam logic [7:0] K_SKP = `K_SKP;

    // Clocks.
    logic ss_clk = 0, pclk = 0;
    initial forever #4000 ss_clk = ~ss_clk;
    initial forever begin
        // (Inputs read 0 until cocotb sets them: no spread then.)
        automatic real cycles = spread_period_ns == 0 ? 0.0
                                : $realtime / (real'(spread_period_ns) * 1000.0);
        automatic real phase = cycles - $floor(cycles);
        automatic real tri_wave = phase < 0.5 ? 2.0 * phase : 2.0 - 2.0 * phase;
        automatic real period = 4000.0 / ((1.0 + real'(offset_ppb) * 1e-9)
                                          * (1.0 - real'(spread_ppm) * 1e-6 * tri_wave));
        #(period / 2.0) pclk = 1;
        #(period / 2.0) pclk = 0;
    end

    // Sequencing (ss), and the same levels synchronised for the pclk side.
    logic ss_reset, dut_reset, armed, run;
    logic [1:0] p_reset_sync, p_armed_sync, p_run_sync;
    always_ff @(posedge ss_clk) begin
        ss_reset <= reset;
        if (ss_reset) ss_cycles <= 0;
        else ss_cycles <= ss_cycles + 1;
    end
    assign dut_reset = ss_reset || ss_cycles < 16;
    assign armed = !ss_reset && ss_cycles >= 400;
    assign run = !ss_reset && ss_cycles >= 500;
    always_ff @(posedge pclk) begin
        p_reset_sync <= {p_reset_sync[0], ss_reset};
        p_armed_sync <= {p_armed_sync[0], armed};
        p_run_sync <= {p_run_sync[0], run};
    end

    // The crossing.
    logic [17:0] serdes_rx, serdes_tx;
    logic [35:0] mac_tx, mac_rx;
    logic [15:0] serdes_tx_data;
    logic [1:0]  serdes_tx_datak;
    logic [31:0] rx_data;
    logic [3:0]  rx_datak;
    logic [2:0]  rx_status;
    logic [1:0] rx_skp_added, rx_skp_removed;  // SKP pairs this cycle
    logic rx_valid, tx_skp_added, tx_skp_removed;
    logic rx_recentred_now, tx_recentred_now;
    serdes_crossing dut (
        .ss_clk(ss_clk), .ss_rst(dut_reset), .pclk_clk(pclk),
        .serdes_rx_data({serdes_rx[16:9], serdes_rx[7:0]}),
        .serdes_rx_datak({serdes_rx[17], serdes_rx[8]}),
        .serdes_tx_data(serdes_tx_data), .serdes_tx_datak(serdes_tx_datak),
        .rx_data(rx_data), .rx_datak(rx_datak), .rx_status(rx_status), .rx_valid(rx_valid),
        .tx_data({mac_tx[34:27], mac_tx[25:18], mac_tx[16:9], mac_tx[7:0]}),
        .tx_datak({mac_tx[35], mac_tx[26], mac_tx[17], mac_tx[8]}),
        .rx_skp_added(rx_skp_added), .rx_skp_removed(rx_skp_removed),
        .tx_skp_added(tx_skp_added), .tx_skp_removed(tx_skp_removed),
        .rx_recentred(rx_recentred_now), .tx_recentred(tx_recentred_now),
        .rx_fill(rx_fill), .tx_fill(tx_fill));
    assign serdes_tx = {serdes_tx_datak[1], serdes_tx_data[15:8],
                        serdes_tx_datak[0], serdes_tx_data[7:0]};
    assign mac_rx = {rx_datak[3], rx_data[31:24], rx_datak[2], rx_data[23:16],
                     rx_datak[1], rx_data[15:8], rx_datak[0], rx_data[7:0]};

    // Receive: SerDes side sends, MAC side checks.
    crossing_source #(.LANES(2), .WORD_SKP(0), .K_SKP(K_SKP)) rx_source (
        .clk(pclk), .reset(p_reset_sync[1]), .run(p_run_sync[1]), .limit(symbols),
        .out(serdes_rx), .sent(rx_sent), .skp_sent(rx_skp_sent));
    crossing_checker #(.LANES(4), .K_SKP(K_SKP)) rx_checker (
        .clk(ss_clk), .reset(ss_reset), .armed(armed), .in(mac_rx),
        .received(rx_received), .errors(rx_errors), .skp_received(rx_skp_received));

    // Transmit: MAC side sends, SerDes side checks.
    crossing_source #(.LANES(4), .WORD_SKP(1), .K_SKP(K_SKP)) tx_source (
        .clk(ss_clk), .reset(ss_reset), .run(run), .limit(symbols),
        .out(mac_tx), .sent(tx_sent), .skp_sent(tx_skp_sent));
    crossing_checker #(.LANES(2), .K_SKP(K_SKP)) tx_checker (
        .clk(pclk), .reset(p_reset_sync[1]), .armed(p_armed_sync[1]), .in(serdes_tx),
        .received(tx_received), .errors(tx_errors), .skp_received(tx_skp_received));

    // The crossing's own account (ss), from the arming on.
    always_ff @(posedge ss_clk) begin
        if (ss_reset || !armed) begin
            rx_added <= 0; rx_removed <= 0; rx_recentred <= 0;
            tx_added <= 0; tx_removed <= 0; tx_recentred <= 0;
            rx_fill_min <= 8'hFF; rx_fill_max <= 0; tx_fill_min <= 8'hFF; tx_fill_max <= 0;
            done <= 0;
        end else begin
            rx_added <= rx_added + rx_skp_added; rx_removed <= rx_removed + rx_skp_removed;
            rx_recentred <= rx_recentred + rx_recentred_now;
            tx_added <= tx_added + tx_skp_added; tx_removed <= tx_removed + tx_skp_removed;
            tx_recentred <= tx_recentred + tx_recentred_now;
            if (rx_fill < rx_fill_min) rx_fill_min <= rx_fill;
            if (rx_fill > rx_fill_max) rx_fill_max <= rx_fill;
            if (tx_fill < tx_fill_min) tx_fill_min <= tx_fill;
            if (tx_fill > tx_fill_max) tx_fill_max <= tx_fill;
            if ((rx_received >= symbols && tx_received >= symbols) || ss_cycles >= timeout_cycles)
                done <= 1;
        end
    end
endmodule
