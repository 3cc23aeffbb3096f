// Behavioural model of the ECP5 sysMEM block RAM, DP16KD (Lattice TN1264, ECP5 and ECP5-5G Memory
// Usage Guide), for gate-level simulation of yosys netlists: yosys' ECP5 library has only a black
// box for it (yosys #1358). Module busprobe_DP16KD: the netlist writer renames DP16KD cells to it,
// so it never meets the upstream black box of the same name (sim/netlist/cells.py).
//
// The array: 1024 rows of 18 bits (two 9-bit bytes). INITVAL_xx holds rows 16*xx .. 16*xx+15,
// 20 bits each, the row in bits [17:0] (yosys' brams_map_16kd.v, init_slice).
// A port of width W uses address bits ADx[13:log2 step] (x18: [13:4], ADx[1:0] are the two byte
// enables of a write; x36: [13:5], ADx[3:0] four byte enables):
//   x9: row AD[13:4], byte AD[3];
//   x4, x2, x1: row AD[13:4], byte AD[3], the word at bit AD[2:0] of that byte's 8 data bits
//       (the 9th bit of each byte is not reachable in these widths; checked against the INITVAL
//       layout yosys gives such a memory);
//   x36 (pseudo dual-port: port A writes, port B reads): rows {AD[13:5], 0} (DIA / DOA) and
//       {AD[13:5], 1} (DIB / DOB), the word {DIB, DIA} and {DOB, DOA} as yosys' map of a 36-bit
//       memory ($__PDPW16KD_) connects them.
// Each port on a clock edge (CLKxMUX "INV": falling edge) with CEx high and CSx == CSDECODE_x:
//   WEx low: the output latch takes the word at the address (synchronous read);
//   WEx high: the word is written, and the latch takes, per WRITEMODE_x,
//     NORMAL: nothing (holds), WRITETHROUGH: the word as written, READBEFOREWRITE: the word as it
//     was before the write.
// A read on one port of the word the other writes on the same edge sees the old word.
// REGMODE_x "OUTREG" adds the output register, loaded from the latch when OCEx is high.
// RSTx clears the latch and the output register, never the array: RESETMODE "SYNC" on a clock
// edge whatever CEx is, "ASYNC" at once.
// Not modelled (a netlist that uses them stops elaboration): GSR pulses (the global reset only
// acts at configuration, where every output starts at 0), the per-pin inversion muxes other than
// CLKxMUX, and WRITEMODE on a 36-bit port.
module busprobe_DP16KD (
    input  DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9,
    input  DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0,
    input  ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0,
    input  CEA, OCEA, CLKA, WEA, RSTA, CSA2, CSA1, CSA0,
    output DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9,
    output DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0,
    input  DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9,
    input  DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0,
    input  ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0,
    input  CEB, OCEB, CLKB, WEB, RSTB, CSB2, CSB1, CSB0,
    output DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9,
    output DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0
);
    parameter integer DATA_WIDTH_A = 18;
    parameter integer DATA_WIDTH_B = 18;
    parameter REGMODE_A = "NOREG";
    parameter REGMODE_B = "NOREG";
    parameter CSDECODE_A = "0b000";
    parameter CSDECODE_B = "0b000";
    parameter WRITEMODE_A = "NORMAL";
    parameter WRITEMODE_B = "NORMAL";
    parameter CLKAMUX = "CLKA";
    parameter CLKBMUX = "CLKB";
    `include "ecp5_bram_parameters.svh"

    localparam [64*320-1:0] INIT = {
        INITVAL_3F, INITVAL_3E, INITVAL_3D, INITVAL_3C, INITVAL_3B, INITVAL_3A, INITVAL_39,
        INITVAL_38, INITVAL_37, INITVAL_36, INITVAL_35, INITVAL_34, INITVAL_33, INITVAL_32,
        INITVAL_31, INITVAL_30, INITVAL_2F, INITVAL_2E, INITVAL_2D, INITVAL_2C, INITVAL_2B,
        INITVAL_2A, INITVAL_29, INITVAL_28, INITVAL_27, INITVAL_26, INITVAL_25, INITVAL_24,
        INITVAL_23, INITVAL_22, INITVAL_21, INITVAL_20, INITVAL_1F, INITVAL_1E, INITVAL_1D,
        INITVAL_1C, INITVAL_1B, INITVAL_1A, INITVAL_19, INITVAL_18, INITVAL_17, INITVAL_16,
        INITVAL_15, INITVAL_14, INITVAL_13, INITVAL_12, INITVAL_11, INITVAL_10, INITVAL_0F,
        INITVAL_0E, INITVAL_0D, INITVAL_0C, INITVAL_0B, INITVAL_0A, INITVAL_09, INITVAL_08,
        INITVAL_07, INITVAL_06, INITVAL_05, INITVAL_04, INITVAL_03, INITVAL_02, INITVAL_01,
        INITVAL_00};

    // Widths, modes and decodes are checked once; an unsupported one stops elaboration here
    // (with its name) instead of simulating something else.
    function automatic bit width_ok(input integer w);
        return w == 1 || w == 2 || w == 4 || w == 9 || w == 18 || w == 36;
    endfunction
    function automatic bit mode_ok(input string mode);
        return mode == "NORMAL" || mode == "WRITETHROUGH" || mode == "READBEFOREWRITE";
    endfunction
    initial begin
        if (!width_ok(DATA_WIDTH_A) || !width_ok(DATA_WIDTH_B))
            $fatal(1, "busprobe_DP16KD %m: DATA_WIDTH %0d/%0d not modelled", DATA_WIDTH_A,
                   DATA_WIDTH_B);
        if (DATA_WIDTH_B == 36 && DATA_WIDTH_A != 36)
            $fatal(1, "busprobe_DP16KD %m: a 36-bit read port needs the 36-bit write port A");
        if (!mode_ok(WRITEMODE_A) || !mode_ok(WRITEMODE_B))
            $fatal(1, "busprobe_DP16KD %m: WRITEMODE %s/%s not modelled", WRITEMODE_A,
                   WRITEMODE_B);
        if (RESETMODE != "SYNC" && RESETMODE != "ASYNC")
            $fatal(1, "busprobe_DP16KD %m: RESETMODE %s not modelled", RESETMODE);
        if ((REGMODE_A != "NOREG" && REGMODE_A != "OUTREG")
                || (REGMODE_B != "NOREG" && REGMODE_B != "OUTREG"))
            $fatal(1, "busprobe_DP16KD %m: REGMODE %s/%s not modelled", REGMODE_A, REGMODE_B);
    end

    // "0b101" -> 3'b101: the decode a port's chip selects must match.
    function automatic [2:0] cs_decode(input string text);
        return {text[2] == "1", text[3] == "1", text[4] == "1"};
    endfunction
    localparam [2:0] CS_A = cs_decode(CSDECODE_A);
    localparam [2:0] CS_B = cs_decode(CSDECODE_B);

    reg [17:0] mem [0:1023];
    integer row;
    initial for (row = 0; row < 1024; row = row + 1) mem[row] = INIT[row * 20 +: 18];

    wire [17:0] dia = {DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9,
                       DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0};
    wire [17:0] dib = {DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9,
                       DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0};
    wire [13:0] ada = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4,
                       ADA3, ADA2, ADA1, ADA0};
    wire [13:0] adb = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4,
                       ADB3, ADB2, ADB1, ADB0};

    // Bit offset of a narrow (<= 9) word in its row.
    function automatic integer offset(input integer w, input [13:0] ad);
        return (ad[3] ? 9 : 0) + (w >= 9 ? 0 : (ad[2:0] & ~(w - 1)));
    endfunction
    function automatic [17:0] narrow_mask(input integer w);
        return (18'd1 << w) - 18'd1;
    endfunction
    // The first row a port's address selects (x36: the even one of the pair).
    function automatic [9:0] row_of(input integer w, input [13:0] ad);
        return w == 36 ? {ad[13:5], 1'b0} : ad[13:4];
    endfunction
    // The word a port reads from its row(s), low-aligned.
    function automatic [35:0] word_of(input integer w, input [13:0] ad, input [17:0] r0,
                                      input [17:0] r1);
        if (w == 36) return {r1, r0};
        if (w == 18) return {18'd0, r0};
        return {18'd0, (r0 >> offset(w, ad)) & narrow_mask(w)};
    endfunction
    // A row after a port's write of ``d`` (``half``: which row of an x36 pair).
    function automatic [17:0] written(input integer w, input [13:0] ad, input [17:0] r,
                                      input [35:0] d, input bit half);
        reg [17:0] out;
        reg [1:0] be;
        out = r;
        if (w >= 18) begin
            be = w == 36 ? (half ? ad[3:2] : ad[1:0]) : ad[1:0];
            if (be[0]) out[8:0] = half ? d[26:18] : d[8:0];
            if (be[1]) out[17:9] = half ? d[35:27] : d[17:9];
        end else begin
            out = (r & ~(narrow_mask(w) << offset(w, ad)))
                | ((d[17:0] & narrow_mask(w)) << offset(w, ad));
        end
        return out;
    endfunction

    // ---- port A: reads and writes (writes only, when 36 bits wide) ----
    wire clka = CLKAMUX == "INV" ? ~CLKA : CLKA;
    wire cea = CEA && {CSA2, CSA1, CSA0} == CS_A;
    wire [9:0] rowa = row_of(DATA_WIDTH_A, ada);
    wire [35:0] wda = DATA_WIDTH_A == 36 ? {dib, dia} : {18'd0, dia};
    wire [17:0] newa0 = written(DATA_WIDTH_A, ada, mem[rowa], wda, 1'b0);
    wire [17:0] newa1 = written(DATA_WIDTH_A, ada, mem[rowa | 10'd1], wda, 1'b1);
    always @(posedge clka) if (cea && WEA) begin
        mem[rowa] <= newa0;
        if (DATA_WIDTH_A == 36) mem[rowa | 10'd1] <= newa1;
    end
    wire [35:0] nexta = !WEA ? word_of(DATA_WIDTH_A, ada, mem[rowa], 18'd0)
                      : WRITEMODE_A == "WRITETHROUGH" ? word_of(DATA_WIDTH_A, ada, newa0, 18'd0)
                      : word_of(DATA_WIDTH_A, ada, mem[rowa], 18'd0);
    wire holda = WEA && WRITEMODE_A == "NORMAL";

    // ---- port B: reads and writes (reads only, when 36 bits wide) ----
    wire clkb = CLKBMUX == "INV" ? ~CLKB : CLKB;
    wire ceb = CEB && {CSB2, CSB1, CSB0} == CS_B;
    wire web = WEB && DATA_WIDTH_B != 36;
    wire [9:0] rowb = row_of(DATA_WIDTH_B, adb);
    wire [17:0] newb0 = written(DATA_WIDTH_B, adb, mem[rowb], {18'd0, dib}, 1'b0);
    always @(posedge clkb) if (ceb && web) mem[rowb] <= newb0;
    wire [35:0] nextb = !web ? word_of(DATA_WIDTH_B, adb, mem[rowb], mem[rowb | 10'd1])
                      : WRITEMODE_B == "WRITETHROUGH" ? word_of(DATA_WIDTH_B, adb, newb0, 18'd0)
                      : word_of(DATA_WIDTH_B, adb, mem[rowb], 18'd0);
    wire holdb = web && WRITEMODE_B == "NORMAL";

    // ---- output latches and registers, with the reset ----
    wire [35:0] outa, outb;
    busprobe_DP16KD_output #(.REGMODE(REGMODE_A), .RESETMODE(RESETMODE)) out_a (
        .clk(clka), .ce(cea), .hold(holda), .oce(OCEA), .rst(RSTA), .next(nexta), .q(outa));
    busprobe_DP16KD_output #(.REGMODE(REGMODE_B), .RESETMODE(RESETMODE)) out_b (
        .clk(clkb), .ce(ceb), .hold(holdb), .oce(OCEB), .rst(RSTB), .next(nextb), .q(outb));

    // A 36-bit read port drives both output buses; else each port its own.
    wire [17:0] doa = DATA_WIDTH_B == 36 ? outb[17:0] : outa[17:0];
    wire [17:0] dob = DATA_WIDTH_B == 36 ? outb[35:18] : outb[17:0];
    assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9,
            DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0} = doa;
    assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9,
            DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0} = dob;
endmodule

// One port's output: the latch a read loads, the optional output register, the reset of both.
module busprobe_DP16KD_output #(
    parameter REGMODE = "NOREG",
    parameter RESETMODE = "SYNC"
) (
    input clk, ce, hold, oce, rst,
    input [35:0] next,
    output [35:0] q
);
    reg [35:0] latch = 0, oreg = 0;
    generate if (RESETMODE == "ASYNC") begin : async_reset
        always @(posedge clk or posedge rst)
            if (rst) begin
                latch <= 0;
                oreg <= 0;
            end else begin
                if (ce && !hold) latch <= next;
                if (oce) oreg <= latch;
            end
    end else begin : sync_reset
        always @(posedge clk)
            if (rst) begin
                latch <= 0;
                oreg <= 0;
            end else begin
                if (ce && !hold) latch <= next;
                if (oce) oreg <= latch;
            end
    end endgenerate
    assign q = REGMODE == "OUTREG" ? oreg : latch;
endmodule
