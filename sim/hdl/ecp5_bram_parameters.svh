// The parameters both ECP5 block RAM models take alike (busprobe_DP16KD, and busprobe_PDPW16KD,
// which passes them on to it), included in the body of each so they are written once: the reset
// and initialisation modes, and the initial contents as the cells carry them, INITVAL_00 ..
// INITVAL_3F, 16 rows of 20 bits each (ecp5_dp16kd.sv says how a row is laid out).
parameter RESETMODE = "SYNC";
parameter ASYNC_RESET_RELEASE = "SYNC";
parameter GSR = "ENABLED";
parameter INIT_DATA = "STATIC";
parameter [319:0] INITVAL_00 = 0, INITVAL_01 = 0, INITVAL_02 = 0, INITVAL_03 = 0;
parameter [319:0] INITVAL_04 = 0, INITVAL_05 = 0, INITVAL_06 = 0, INITVAL_07 = 0;
parameter [319:0] INITVAL_08 = 0, INITVAL_09 = 0, INITVAL_0A = 0, INITVAL_0B = 0;
parameter [319:0] INITVAL_0C = 0, INITVAL_0D = 0, INITVAL_0E = 0, INITVAL_0F = 0;
parameter [319:0] INITVAL_10 = 0, INITVAL_11 = 0, INITVAL_12 = 0, INITVAL_13 = 0;
parameter [319:0] INITVAL_14 = 0, INITVAL_15 = 0, INITVAL_16 = 0, INITVAL_17 = 0;
parameter [319:0] INITVAL_18 = 0, INITVAL_19 = 0, INITVAL_1A = 0, INITVAL_1B = 0;
parameter [319:0] INITVAL_1C = 0, INITVAL_1D = 0, INITVAL_1E = 0, INITVAL_1F = 0;
parameter [319:0] INITVAL_20 = 0, INITVAL_21 = 0, INITVAL_22 = 0, INITVAL_23 = 0;
parameter [319:0] INITVAL_24 = 0, INITVAL_25 = 0, INITVAL_26 = 0, INITVAL_27 = 0;
parameter [319:0] INITVAL_28 = 0, INITVAL_29 = 0, INITVAL_2A = 0, INITVAL_2B = 0;
parameter [319:0] INITVAL_2C = 0, INITVAL_2D = 0, INITVAL_2E = 0, INITVAL_2F = 0;
parameter [319:0] INITVAL_30 = 0, INITVAL_31 = 0, INITVAL_32 = 0, INITVAL_33 = 0;
parameter [319:0] INITVAL_34 = 0, INITVAL_35 = 0, INITVAL_36 = 0, INITVAL_37 = 0;
parameter [319:0] INITVAL_38 = 0, INITVAL_39 = 0, INITVAL_3A = 0, INITVAL_3B = 0;
parameter [319:0] INITVAL_3C = 0, INITVAL_3D = 0, INITVAL_3E = 0, INITVAL_3F = 0;
