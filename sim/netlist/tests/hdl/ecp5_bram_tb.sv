// Test bench of the block RAM models (bram_cocotb.py): one instance per configuration under test,
// all driven by the same ports; each instance's outputs are ports of their own.
`define DP16KD(NAME, WE_A, PARAMS) \
    busprobe_DP16KD #PARAMS NAME ( \
        .DIA17(dia[17]), .DIA16(dia[16]), .DIA15(dia[15]), .DIA14(dia[14]), .DIA13(dia[13]), \
        .DIA12(dia[12]), .DIA11(dia[11]), .DIA10(dia[10]), .DIA9(dia[9]), .DIA8(dia[8]), \
        .DIA7(dia[7]), .DIA6(dia[6]), .DIA5(dia[5]), .DIA4(dia[4]), .DIA3(dia[3]), \
        .DIA2(dia[2]), .DIA1(dia[1]), .DIA0(dia[0]), \
        .ADA13(ada[13]), .ADA12(ada[12]), .ADA11(ada[11]), .ADA10(ada[10]), .ADA9(ada[9]), \
        .ADA8(ada[8]), .ADA7(ada[7]), .ADA6(ada[6]), .ADA5(ada[5]), .ADA4(ada[4]), \
        .ADA3(ada[3]), .ADA2(ada[2]), .ADA1(ada[1]), .ADA0(ada[0]), \
        .CEA(cea), .OCEA(ocea), .CLKA(clka), .WEA(WE_A), .RSTA(rsta), \
        .CSA2(csa[2]), .CSA1(csa[1]), .CSA0(csa[0]), \
        .DOA17(doa_``NAME[17]), .DOA16(doa_``NAME[16]), .DOA15(doa_``NAME[15]), \
        .DOA14(doa_``NAME[14]), .DOA13(doa_``NAME[13]), .DOA12(doa_``NAME[12]), \
        .DOA11(doa_``NAME[11]), .DOA10(doa_``NAME[10]), .DOA9(doa_``NAME[9]), \
        .DOA8(doa_``NAME[8]), .DOA7(doa_``NAME[7]), .DOA6(doa_``NAME[6]), \
        .DOA5(doa_``NAME[5]), .DOA4(doa_``NAME[4]), .DOA3(doa_``NAME[3]), \
        .DOA2(doa_``NAME[2]), .DOA1(doa_``NAME[1]), .DOA0(doa_``NAME[0]), \
        .DIB17(dib[17]), .DIB16(dib[16]), .DIB15(dib[15]), .DIB14(dib[14]), .DIB13(dib[13]), \
        .DIB12(dib[12]), .DIB11(dib[11]), .DIB10(dib[10]), .DIB9(dib[9]), .DIB8(dib[8]), \
        .DIB7(dib[7]), .DIB6(dib[6]), .DIB5(dib[5]), .DIB4(dib[4]), .DIB3(dib[3]), \
        .DIB2(dib[2]), .DIB1(dib[1]), .DIB0(dib[0]), \
        .ADB13(adb[13]), .ADB12(adb[12]), .ADB11(adb[11]), .ADB10(adb[10]), .ADB9(adb[9]), \
        .ADB8(adb[8]), .ADB7(adb[7]), .ADB6(adb[6]), .ADB5(adb[5]), .ADB4(adb[4]), \
        .ADB3(adb[3]), .ADB2(adb[2]), .ADB1(adb[1]), .ADB0(adb[0]), \
        .CEB(ceb), .OCEB(oceb), .CLKB(clkb), .WEB(web), .RSTB(rstb), \
        .CSB2(csb[2]), .CSB1(csb[1]), .CSB0(csb[0]), \
        .DOB17(dob_``NAME[17]), .DOB16(dob_``NAME[16]), .DOB15(dob_``NAME[15]), \
        .DOB14(dob_``NAME[14]), .DOB13(dob_``NAME[13]), .DOB12(dob_``NAME[12]), \
        .DOB11(dob_``NAME[11]), .DOB10(dob_``NAME[10]), .DOB9(dob_``NAME[9]), \
        .DOB8(dob_``NAME[8]), .DOB7(dob_``NAME[7]), .DOB6(dob_``NAME[6]), \
        .DOB5(dob_``NAME[5]), .DOB4(dob_``NAME[4]), .DOB3(dob_``NAME[3]), \
        .DOB2(dob_``NAME[2]), .DOB1(dob_``NAME[1]), .DOB0(dob_``NAME[0]));



module ecp5_bram_tb (
    input wire clka, clkb, cea, ceb, ocea, oceb, wea, web, rsta, rstb,
    input wire [2:0] csa, csb,
    input wire [13:0] ada, adb,
    input wire [17:0] dia, dib,
    output wire [17:0] doa_rbw, dob_rbw, doa_wt, dob_wt, doa_normal, dob_normal,
    output wire [17:0] doa_outreg, dob_outreg, doa_async, dob_async, doa_x4, dob_x4,
    output wire [17:0] doa_mixed, dob_mixed, doa_cs, dob_cs, doa_pdp, dob_pdp,
    output wire [35:0] do_pdpw, do_pdpw18
);
    `DP16KD(rbw, wea, (.DATA_WIDTH_A(9), .DATA_WIDTH_B(9), .WRITEMODE_A("READBEFOREWRITE"),
                   .WRITEMODE_B("READBEFOREWRITE")))
    `DP16KD(wt, wea, (.DATA_WIDTH_A(9), .DATA_WIDTH_B(9), .WRITEMODE_A("WRITETHROUGH")))
    `DP16KD(normal, wea, (.DATA_WIDTH_A(9), .DATA_WIDTH_B(9), .WRITEMODE_A("NORMAL")))
    // x18 with byte enables, the output register on port A, synchronous reset.
    `DP16KD(outreg, wea, (.DATA_WIDTH_A(18), .DATA_WIDTH_B(18), .REGMODE_A("OUTREG"),
                      .RESETMODE("SYNC")))
    `DP16KD(async, wea, (.DATA_WIDTH_A(9), .DATA_WIDTH_B(9), .RESETMODE("ASYNC")))
    // Row 0 = 18'h0de81 (the x4 words 1, 8, 15, 6 as yosys lays them out, the 9th bits skipped),
    // row 1 = 18'h3ffff; never written (the other tests' writes would land in it).
    `DP16KD(x4, 1'b0, (.DATA_WIDTH_A(4), .DATA_WIDTH_B(4),
                  .INITVAL_00({280'd0, 2'b00, 18'h3ffff, 2'b00, 18'h0de81})))
    `DP16KD(mixed, wea, (.DATA_WIDTH_A(9), .DATA_WIDTH_B(18)))
    `DP16KD(cs, wea, (.DATA_WIDTH_A(9), .DATA_WIDTH_B(9), .CSDECODE_A("0b101")))
    `DP16KD(pdp, wea, (.DATA_WIDTH_A(36), .DATA_WIDTH_B(36)))

    // PDPW16KD: the write port on port A's pins (DI = {dib, dia}, ADW = ada[13:5], BE = ada[3:0]),
    // the read port on port B's.
    wire [35:0] di = {dib, dia};
    busprobe_PDPW16KD #(.DATA_WIDTH_R(36)) pdpw (
        .DI35(di[35]), .DI34(di[34]), .DI33(di[33]), .DI32(di[32]), .DI31(di[31]), .DI30(di[30]),
        .DI29(di[29]), .DI28(di[28]), .DI27(di[27]), .DI26(di[26]), .DI25(di[25]), .DI24(di[24]),
        .DI23(di[23]), .DI22(di[22]), .DI21(di[21]), .DI20(di[20]), .DI19(di[19]), .DI18(di[18]),
        .DI17(di[17]), .DI16(di[16]), .DI15(di[15]), .DI14(di[14]), .DI13(di[13]), .DI12(di[12]),
        .DI11(di[11]), .DI10(di[10]), .DI9(di[9]), .DI8(di[8]), .DI7(di[7]), .DI6(di[6]),
        .DI5(di[5]), .DI4(di[4]), .DI3(di[3]), .DI2(di[2]), .DI1(di[1]), .DI0(di[0]),
        .ADW8(ada[13]), .ADW7(ada[12]), .ADW6(ada[11]), .ADW5(ada[10]), .ADW4(ada[9]),
        .ADW3(ada[8]), .ADW2(ada[7]), .ADW1(ada[6]), .ADW0(ada[5]),
        .BE3(ada[3]), .BE2(ada[2]), .BE1(ada[1]), .BE0(ada[0]), .CEW(cea), .CLKW(clka),
        .CSW2(csa[2]), .CSW1(csa[1]), .CSW0(csa[0]),
        .ADR13(adb[13]), .ADR12(adb[12]), .ADR11(adb[11]), .ADR10(adb[10]), .ADR9(adb[9]),
        .ADR8(adb[8]), .ADR7(adb[7]), .ADR6(adb[6]), .ADR5(adb[5]), .ADR4(adb[4]),
        .ADR3(adb[3]), .ADR2(adb[2]), .ADR1(adb[1]), .ADR0(adb[0]),
        .CER(ceb), .OCER(oceb), .CLKR(clkb), .CSR2(csb[2]), .CSR1(csb[1]), .CSR0(csb[0]),
        .RST(rstb),
        .DO35(do_pdpw[35]), .DO34(do_pdpw[34]), .DO33(do_pdpw[33]), .DO32(do_pdpw[32]),
        .DO31(do_pdpw[31]), .DO30(do_pdpw[30]), .DO29(do_pdpw[29]), .DO28(do_pdpw[28]),
        .DO27(do_pdpw[27]), .DO26(do_pdpw[26]), .DO25(do_pdpw[25]), .DO24(do_pdpw[24]),
        .DO23(do_pdpw[23]), .DO22(do_pdpw[22]), .DO21(do_pdpw[21]), .DO20(do_pdpw[20]),
        .DO19(do_pdpw[19]), .DO18(do_pdpw[18]), .DO17(do_pdpw[17]), .DO16(do_pdpw[16]),
        .DO15(do_pdpw[15]), .DO14(do_pdpw[14]), .DO13(do_pdpw[13]), .DO12(do_pdpw[12]),
        .DO11(do_pdpw[11]), .DO10(do_pdpw[10]), .DO9(do_pdpw[9]), .DO8(do_pdpw[8]),
        .DO7(do_pdpw[7]), .DO6(do_pdpw[6]), .DO5(do_pdpw[5]), .DO4(do_pdpw[4]),
        .DO3(do_pdpw[3]), .DO2(do_pdpw[2]), .DO1(do_pdpw[1]), .DO0(do_pdpw[0]));
    busprobe_PDPW16KD #(.DATA_WIDTH_R(18)) pdpw18 (
        .DI35(di[35]), .DI34(di[34]), .DI33(di[33]), .DI32(di[32]), .DI31(di[31]), .DI30(di[30]),
        .DI29(di[29]), .DI28(di[28]), .DI27(di[27]), .DI26(di[26]), .DI25(di[25]), .DI24(di[24]),
        .DI23(di[23]), .DI22(di[22]), .DI21(di[21]), .DI20(di[20]), .DI19(di[19]), .DI18(di[18]),
        .DI17(di[17]), .DI16(di[16]), .DI15(di[15]), .DI14(di[14]), .DI13(di[13]), .DI12(di[12]),
        .DI11(di[11]), .DI10(di[10]), .DI9(di[9]), .DI8(di[8]), .DI7(di[7]), .DI6(di[6]),
        .DI5(di[5]), .DI4(di[4]), .DI3(di[3]), .DI2(di[2]), .DI1(di[1]), .DI0(di[0]),
        .ADW8(ada[13]), .ADW7(ada[12]), .ADW6(ada[11]), .ADW5(ada[10]), .ADW4(ada[9]),
        .ADW3(ada[8]), .ADW2(ada[7]), .ADW1(ada[6]), .ADW0(ada[5]),
        .BE3(ada[3]), .BE2(ada[2]), .BE1(ada[1]), .BE0(ada[0]), .CEW(cea), .CLKW(clka),
        .CSW2(csa[2]), .CSW1(csa[1]), .CSW0(csa[0]),
        .ADR13(adb[13]), .ADR12(adb[12]), .ADR11(adb[11]), .ADR10(adb[10]), .ADR9(adb[9]),
        .ADR8(adb[8]), .ADR7(adb[7]), .ADR6(adb[6]), .ADR5(adb[5]), .ADR4(adb[4]),
        .ADR3(adb[3]), .ADR2(adb[2]), .ADR1(adb[1]), .ADR0(adb[0]),
        .CER(ceb), .OCER(oceb), .CLKR(clkb), .CSR2(csb[2]), .CSR1(csb[1]), .CSR0(csb[0]),
        .RST(rstb),
        .DO35(do_pdpw18[35]), .DO34(do_pdpw18[34]), .DO33(do_pdpw18[33]), .DO32(do_pdpw18[32]),
        .DO31(do_pdpw18[31]), .DO30(do_pdpw18[30]), .DO29(do_pdpw18[29]), .DO28(do_pdpw18[28]),
        .DO27(do_pdpw18[27]), .DO26(do_pdpw18[26]), .DO25(do_pdpw18[25]), .DO24(do_pdpw18[24]),
        .DO23(do_pdpw18[23]), .DO22(do_pdpw18[22]), .DO21(do_pdpw18[21]), .DO20(do_pdpw18[20]),
        .DO19(do_pdpw18[19]), .DO18(do_pdpw18[18]), .DO17(do_pdpw18[17]), .DO16(do_pdpw18[16]),
        .DO15(do_pdpw18[15]), .DO14(do_pdpw18[14]), .DO13(do_pdpw18[13]), .DO12(do_pdpw18[12]),
        .DO11(do_pdpw18[11]), .DO10(do_pdpw18[10]), .DO9(do_pdpw18[9]), .DO8(do_pdpw18[8]),
        .DO7(do_pdpw18[7]), .DO6(do_pdpw18[6]), .DO5(do_pdpw18[5]), .DO4(do_pdpw18[4]),
        .DO3(do_pdpw18[3]), .DO2(do_pdpw18[2]), .DO1(do_pdpw18[1]), .DO0(do_pdpw18[0]));
endmodule
