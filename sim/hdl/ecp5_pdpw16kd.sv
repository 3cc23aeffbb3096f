// Behavioural model of the ECP5 pseudo dual-port block RAM, PDPW16KD (Lattice TN1264): a 36-bit
// write port (ADW[8:0] selects one of 512 words, BE[3:0] its four 9-bit bytes) and a read port of
// DATA_WIDTH_R bits (ADR[13:0] as a DP16KD port of that width). Reading a word returns what was
// written to it: DO[35:0] = DI[35:0] (x36); a narrower read returns its part of the 36-bit word
// on DO[DATA_WIDTH_R-1:0]. Built on busprobe_DP16KD (ecp5_dp16kd.sv), whose x36 mode is this
// primitive's array; the netlist writer renames PDPW16KD cells to busprobe_PDPW16KD.
//
// nextpnr converts a PDPW16KD cell to a 36-bit DP16KD with DO[17:0] on DOB and DO[35:18] on DOA
// (ecp5/pack.cc, pack_ebr), while yosys' map of a 36-bit memory reads {DOB, DOA}: the two do not
// agree on which half comes out where. This model follows the datasheet (DO is DI).
module busprobe_PDPW16KD (
    input  DI35, DI34, DI33, DI32, DI31, DI30, DI29, DI28, DI27, DI26, DI25, DI24,
    input  DI23, DI22, DI21, DI20, DI19, DI18, DI17, DI16, DI15, DI14, DI13, DI12,
    input  DI11, DI10, DI9, DI8, DI7, DI6, DI5, DI4, DI3, DI2, DI1, DI0,
    input  ADW8, ADW7, ADW6, ADW5, ADW4, ADW3, ADW2, ADW1, ADW0,
    input  BE3, BE2, BE1, BE0, CEW, CLKW, CSW2, CSW1, CSW0,
    input  ADR13, ADR12, ADR11, ADR10, ADR9, ADR8, ADR7, ADR6, ADR5, ADR4, ADR3, ADR2, ADR1,
    input  ADR0, CER, OCER, CLKR, CSR2, CSR1, CSR0, RST,
    output DO35, DO34, DO33, DO32, DO31, DO30, DO29, DO28, DO27, DO26, DO25, DO24,
    output DO23, DO22, DO21, DO20, DO19, DO18, DO17, DO16, DO15, DO14, DO13, DO12,
    output DO11, DO10, DO9, DO8, DO7, DO6, DO5, DO4, DO3, DO2, DO1, DO0
);
    parameter integer DATA_WIDTH_W = 36;
    parameter integer DATA_WIDTH_R = 36;
    parameter REGMODE = "NOREG";
    parameter CSDECODE_W = "0b000";
    parameter CSDECODE_R = "0b000";
    parameter CLKWMUX = "CLKW";
    parameter CLKRMUX = "CLKR";
    `include "ecp5_bram_parameters.svh"

    initial if (DATA_WIDTH_W != 36)
        $fatal(1, "busprobe_PDPW16KD %m: DATA_WIDTH_W %0d (the write port is 36 bits)",
               DATA_WIDTH_W);

    wire [17:0] doa, dob;
    wire [35:0] di = {DI35, DI34, DI33, DI32, DI31, DI30, DI29, DI28, DI27, DI26, DI25, DI24,
                      DI23, DI22, DI21, DI20, DI19, DI18, DI17, DI16, DI15, DI14, DI13, DI12,
                      DI11, DI10, DI9, DI8, DI7, DI6, DI5, DI4, DI3, DI2, DI1, DI0};
    busprobe_DP16KD #(
        .DATA_WIDTH_A(36), .DATA_WIDTH_B(DATA_WIDTH_R), .REGMODE_A("NOREG"), .REGMODE_B(REGMODE),
        .RESETMODE(RESETMODE), .ASYNC_RESET_RELEASE(ASYNC_RESET_RELEASE),
        .CSDECODE_A(CSDECODE_W), .CSDECODE_B(CSDECODE_R),
        .CLKAMUX(CLKWMUX == "INV" ? "INV" : "CLKA"), .CLKBMUX(CLKRMUX == "INV" ? "INV" : "CLKB"),
        .GSR(GSR), .INIT_DATA(INIT_DATA),
        .INITVAL_00(INITVAL_00), .INITVAL_01(INITVAL_01), .INITVAL_02(INITVAL_02),
        .INITVAL_03(INITVAL_03), .INITVAL_04(INITVAL_04), .INITVAL_05(INITVAL_05),
        .INITVAL_06(INITVAL_06), .INITVAL_07(INITVAL_07), .INITVAL_08(INITVAL_08),
        .INITVAL_09(INITVAL_09), .INITVAL_0A(INITVAL_0A), .INITVAL_0B(INITVAL_0B),
        .INITVAL_0C(INITVAL_0C), .INITVAL_0D(INITVAL_0D), .INITVAL_0E(INITVAL_0E),
        .INITVAL_0F(INITVAL_0F), .INITVAL_10(INITVAL_10), .INITVAL_11(INITVAL_11),
        .INITVAL_12(INITVAL_12), .INITVAL_13(INITVAL_13), .INITVAL_14(INITVAL_14),
        .INITVAL_15(INITVAL_15), .INITVAL_16(INITVAL_16), .INITVAL_17(INITVAL_17),
        .INITVAL_18(INITVAL_18), .INITVAL_19(INITVAL_19), .INITVAL_1A(INITVAL_1A),
        .INITVAL_1B(INITVAL_1B), .INITVAL_1C(INITVAL_1C), .INITVAL_1D(INITVAL_1D),
        .INITVAL_1E(INITVAL_1E), .INITVAL_1F(INITVAL_1F), .INITVAL_20(INITVAL_20),
        .INITVAL_21(INITVAL_21), .INITVAL_22(INITVAL_22), .INITVAL_23(INITVAL_23),
        .INITVAL_24(INITVAL_24), .INITVAL_25(INITVAL_25), .INITVAL_26(INITVAL_26),
        .INITVAL_27(INITVAL_27), .INITVAL_28(INITVAL_28), .INITVAL_29(INITVAL_29),
        .INITVAL_2A(INITVAL_2A), .INITVAL_2B(INITVAL_2B), .INITVAL_2C(INITVAL_2C),
        .INITVAL_2D(INITVAL_2D), .INITVAL_2E(INITVAL_2E), .INITVAL_2F(INITVAL_2F),
        .INITVAL_30(INITVAL_30), .INITVAL_31(INITVAL_31), .INITVAL_32(INITVAL_32),
        .INITVAL_33(INITVAL_33), .INITVAL_34(INITVAL_34), .INITVAL_35(INITVAL_35),
        .INITVAL_36(INITVAL_36), .INITVAL_37(INITVAL_37), .INITVAL_38(INITVAL_38),
        .INITVAL_39(INITVAL_39), .INITVAL_3A(INITVAL_3A), .INITVAL_3B(INITVAL_3B),
        .INITVAL_3C(INITVAL_3C), .INITVAL_3D(INITVAL_3D), .INITVAL_3E(INITVAL_3E),
        .INITVAL_3F(INITVAL_3F)
    ) ram (
        .DIA17(di[17]), .DIA16(di[16]), .DIA15(di[15]), .DIA14(di[14]), .DIA13(di[13]),
        .DIA12(di[12]), .DIA11(di[11]), .DIA10(di[10]), .DIA9(di[9]), .DIA8(di[8]),
        .DIA7(di[7]), .DIA6(di[6]), .DIA5(di[5]), .DIA4(di[4]), .DIA3(di[3]), .DIA2(di[2]),
        .DIA1(di[1]), .DIA0(di[0]),
        .DIB17(di[35]), .DIB16(di[34]), .DIB15(di[33]), .DIB14(di[32]), .DIB13(di[31]),
        .DIB12(di[30]), .DIB11(di[29]), .DIB10(di[28]), .DIB9(di[27]), .DIB8(di[26]),
        .DIB7(di[25]), .DIB6(di[24]), .DIB5(di[23]), .DIB4(di[22]), .DIB3(di[21]),
        .DIB2(di[20]), .DIB1(di[19]), .DIB0(di[18]),
        .ADA13(ADW8), .ADA12(ADW7), .ADA11(ADW6), .ADA10(ADW5), .ADA9(ADW4), .ADA8(ADW3),
        .ADA7(ADW2), .ADA6(ADW1), .ADA5(ADW0), .ADA4(1'b0), .ADA3(BE3), .ADA2(BE2),
        .ADA1(BE1), .ADA0(BE0),
        .CEA(CEW), .OCEA(1'b0), .CLKA(CLKW), .WEA(1'b1), .RSTA(1'b0),
        .CSA2(CSW2), .CSA1(CSW1), .CSA0(CSW0),
        .ADB13(ADR13), .ADB12(ADR12), .ADB11(ADR11), .ADB10(ADR10), .ADB9(ADR9), .ADB8(ADR8),
        .ADB7(ADR7), .ADB6(ADR6), .ADB5(ADR5), .ADB4(ADR4), .ADB3(ADR3), .ADB2(ADR2),
        .ADB1(ADR1), .ADB0(ADR0),
        .CEB(CER), .OCEB(OCER), .CLKB(CLKR), .WEB(1'b0), .RSTB(RST),
        .CSB2(CSR2), .CSB1(CSR1), .CSB0(CSR0),
        .DOA17(doa[17]), .DOA16(doa[16]), .DOA15(doa[15]), .DOA14(doa[14]),
        .DOA13(doa[13]), .DOA12(doa[12]), .DOA11(doa[11]), .DOA10(doa[10]), .DOA9(doa[9]),
        .DOA8(doa[8]), .DOA7(doa[7]), .DOA6(doa[6]), .DOA5(doa[5]), .DOA4(doa[4]),
        .DOA3(doa[3]), .DOA2(doa[2]), .DOA1(doa[1]), .DOA0(doa[0]),
        .DOB17(dob[17]), .DOB16(dob[16]), .DOB15(dob[15]), .DOB14(dob[14]), .DOB13(dob[13]),
        .DOB12(dob[12]), .DOB11(dob[11]), .DOB10(dob[10]), .DOB9(dob[9]), .DOB8(dob[8]),
        .DOB7(dob[7]), .DOB6(dob[6]), .DOB5(dob[5]), .DOB4(dob[4]), .DOB3(dob[3]),
        .DOB2(dob[2]), .DOB1(dob[1]), .DOB0(dob[0])
    );
    wire [35:0] dout = DATA_WIDTH_R == 36 ? {dob, doa} : {18'd0, dob};
    assign {DO35, DO34, DO33, DO32, DO31, DO30, DO29, DO28, DO27, DO26, DO25, DO24,
            DO23, DO22, DO21, DO20, DO19, DO18, DO17, DO16, DO15, DO14, DO13, DO12,
            DO11, DO10, DO9, DO8, DO7, DO6, DO5, DO4, DO3, DO2, DO1, DO0} = dout;
endmodule
