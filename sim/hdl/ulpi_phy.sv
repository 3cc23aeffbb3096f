// ULPI PHY model: what a USB3343 does on its ULPI side, cycle by cycle, with the USB line side
// handed to the Python host model one whole packet at a time.
//
// Why SystemVerilog: a Python await per 60 MHz clock caps a cocotb simulation at ~70k cycles/s
// (docs/DESIGN.md §8) and a 1 MiB transfer is ~1.2 M cycles. Here every per-byte ULPI step runs inside
// the simulator; Python writes a packet once (one wide vector, its length and a per-byte stall mask)
// and reads a captured packet once, so the host model runs per packet, not per clock.
//
// Ports (direction as seen from this module)
//   clk, rst                      input   60 MHz ULPI clock, synchronous active-high reset
//   ulpi_data_i [7:0]             output  PHY -> link data (RX CMDs, received bytes, reg reads)
//   ulpi_data_o [7:0], _oe        input   link -> PHY data (TX CMDs, transmit bytes, reg writes)
//   ulpi_dir, ulpi_nxt            output  bus direction / throttle
//   ulpi_stp                      input   link ends a transmit or register write
//   host_linestate [1:0]          input   LineState the host drives when no packet is on the line
//                                         (00 SE0/squelch, 01 J, 10 K)
//   rx_data [8*MAX_BYTES-1:0]     input   host->device packet, byte i in bits [8i+7:8i] (PID first)
//   rx_stall [MAX_BYTES-1:0]      input   bit i: one nxt-low cycle before byte i (bit stuffing
//                                         lengthens the line time; the host model computes where)
//   rx_len [15:0], rx_start_at    input   packet length; cycle at which its SYNC starts on the wire
//   rx_request [31:0]             input   incremented by the host model to queue the packet above
//   rx_count [31:0]               output  packets delivered; equals rx_request when idle
//   rx_end_cycle [63:0]           output  cycle the last delivered packet's end RX CMD was driven
//   tx_data [8*MAX_BYTES-1:0]     output  last device->host packet, PID first (the TX CMD's PID)
//   tx_len [15:0]                 output  its length in bytes, PID included
//   tx_start_cycle, tx_end_cycle  output  cycle of its TX CMD and of its stp
//   tx_count [31:0]               output  device packets captured (chirps are not counted)
//   tx_busy                       output  the device is transmitting a packet (not a chirp)
//   tx_stuffed [15:0]             output  bits the line stuffed into that packet (§7.1.9)
//   tx_crc16 [15:0]               output  CRC16 register over the bytes after the PID; 0xB001
//                                         (the CRC-16/USB residue) when a data packet is intact
//   func_ctrl [7:0]               output  Function Control register (XcvrSelect[1:0],
//                                         TermSelect[2], OpMode[4:3], Reset[5], SuspendM[6])
//   dev_chirp                     output  the device is driving a chirp K (transmit in OpMode 2)
//   cycle [63:0]                  output  free-running cycle counter (the simulation's clock)
//
// Parameters
//   MAX_BYTES                     largest packet, PID + 512 data bytes + CRC16 = 515 by default
module ulpi_phy #(
    parameter int MAX_BYTES = 520
) (
    input  logic                     clk,
    input  logic                     rst,
    output logic [7:0]               ulpi_data_i,
    input  logic [7:0]               ulpi_data_o,
    input  logic                     ulpi_data_oe,
    output logic                     ulpi_dir,
    output logic                     ulpi_nxt,
    input  logic                     ulpi_stp,
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
    // ULPI 1.1 Table 3.8.1.2: RX CMD = {alt_int, ID, RxEvent[1:0], VbusState[1:0], LineState}.
    // VBUS always valid (11), ID 0.
    function automatic logic [7:0] rx_cmd(input logic [1:0] linestate, input logic rx_active);
        return {1'b0, 1'b0, 1'b0, rx_active, 2'b11, linestate};
    endfunction

    localparam logic [1:0] LS_SE0 = 2'b00, LS_J = 2'b01, LS_K = 2'b10;
    // The host's packet starts on the wire at rx_start_at; the PHY has seen its 32-bit SYNC
    // 4 cycles later, minus the turnaround and RX CMD cycles it spends before the first byte.
    localparam int SYNC_LEAD = 2;

    typedef enum logic [3:0] {
        IDLE, REGW_ADDR, REGW_DATA, REGW_STP, REGR_ACK, REGR_TURN, REGR_DATA,
        RXCMD_TURN, RXCMD_OUT, RX_TURN, RX_BYTES, RX_END, TX
    } state_t;
    state_t state;

    logic [7:0] regs [64];
    logic [5:0] reg_addr;
    logic [1:0] reported_linestate;
    logic [15:0] rx_index;
    logic rx_stalled;
    logic tx_first;      // the nxt cycle that accepted the TX CMD (no data byte on the bus)
    logic tx_chirp;
    logic [3:0] stuff_run;   // consecutive 1 bits on the line, for stuffing (§7.1.9)
    logic [4:0] stuff_acc;   // stuffed bits not yet paid for with a stall cycle

    wire [1:0] effective_linestate = dev_chirp ? LS_K : host_linestate;
    wire rx_pending = (rx_count != rx_request) && (cycle + SYNC_LEAD >= rx_start_at);

    assign func_ctrl = regs[4];
    assign tx_busy = (state == TX) && !tx_chirp;

    // One byte through the stuffing counter: returns {new_run, stuffed bits in this byte}.
    function automatic logic [7:0] stuff_byte(input logic [7:0] value, input logic [3:0] run_in);
        logic [3:0] run = run_in;
        logic [3:0] added = 0;
        for (int i = 0; i < 8; i++) begin
            if (value[i]) begin
                run = run + 1;
                if (run == 6) begin
                    added = added + 1;
                    run = 0;
                end
            end else begin
                run = 0;
            end
        end
        return {run, added};
    endfunction

    // CRC-16/USB register step (§8.3.5.2), reflected polynomial 0xA001, LSB first.
    function automatic logic [15:0] crc16_byte(input logic [15:0] crc_in, input logic [7:0] value);
        logic [15:0] crc = crc_in ^ {8'h00, value};
        for (int i = 0; i < 8; i++) crc = crc[0] ? (crc >> 1) ^ 16'hA001 : crc >> 1;
        return crc;
    endfunction

    // ULPI registers with set/clear aliases (ULPI 1.1 Table 4.1.1): 0x04..0x12 in groups of 3.
    task automatic write_register(input logic [5:0] addr, input logic [7:0] value);
        if (addr >= 6'h04 && addr <= 6'h12) begin
            logic [5:0] base = 6'h04 + 6'((addr - 6'h04) / 3 * 3);
            case ((addr - 6'h04) % 3)
                0: regs[base] <= value;
                1: regs[base] <= regs[base] | value;
                default: regs[base] <= regs[base] & ~value;
            endcase
        end else begin
            regs[addr] <= value;
        end
    endtask

    always_ff @(posedge clk) begin
        if (rst) begin
            state <= IDLE;
            ulpi_dir <= 0;
            ulpi_nxt <= 0;
            ulpi_data_i <= 0;
            rx_count <= 0;
            tx_count <= 0;
            tx_len <= 0;
            dev_chirp <= 0;
            reported_linestate <= 2'b11;  // forces an RX CMD once out of reset
            cycle <= 0;
            for (int i = 0; i < 64; i++) regs[i] <= 0;
            regs[0] <= 8'h24; regs[1] <= 8'h04; regs[2] <= 8'h09; regs[3] <= 8'h00;  // USB3343 IDs
            regs[4] <= 8'h41;  // Function Control reset: FS, SuspendM
            regs[10] <= 8'h06;  // OTG Control reset: DP/DM pull-downs
        end else begin
            cycle <= cycle + 1;
            case (state)
            IDLE: begin
                if (ulpi_data_o[7:6] == 2'b01) begin  // TX CMD
                    tx_chirp <= (regs[4][4:3] == 2'b10);
                    dev_chirp <= (regs[4][4:3] == 2'b10);
                    tx_first <= 1;
                    tx_len <= 1;
                    tx_data[7:0] <= {~ulpi_data_o[3:0], ulpi_data_o[3:0]};
                    tx_start_cycle <= cycle;
                    {stuff_run, stuff_acc[3:0]} <=
                        stuff_byte({~ulpi_data_o[3:0], ulpi_data_o[3:0]}, 4'd1);
                    tx_stuffed <= 16'(stuff_byte({~ulpi_data_o[3:0], ulpi_data_o[3:0]}, 4'd1) & 8'h0F);
                    tx_crc16 <= 16'hFFFF;
                    stuff_acc[4] <= 0;
                    ulpi_nxt <= 1;
                    state <= TX;
                end else if (ulpi_data_o[7:6] == 2'b10) begin  // register write
                    reg_addr <= ulpi_data_o[5:0];
                    ulpi_nxt <= 1;
                    state <= REGW_ADDR;
                end else if (ulpi_data_o[7:6] == 2'b11) begin  // register read
                    reg_addr <= ulpi_data_o[5:0];
                    ulpi_nxt <= 1;
                    state <= REGR_ACK;
                end else if (rx_pending) begin
                    // dir and nxt rise together: RxActive without an RX CMD (ULPI 1.1 §3.8.2.4);
                    // links such as LUNA's start their receive on exactly this.
                    ulpi_dir <= 1;
                    ulpi_nxt <= 1;
                    rx_index <= 0;
                    rx_stalled <= 0;
                    state <= RX_TURN;
                end else if (effective_linestate != reported_linestate) begin
                    ulpi_dir <= 1;
                    state <= RXCMD_TURN;
                end
            end
            REGW_ADDR: begin
                ulpi_nxt <= 1;
                state <= REGW_DATA;
            end
            REGW_DATA: begin
                ulpi_nxt <= 0;
                write_register(reg_addr, ulpi_data_o);
                state <= REGW_STP;
            end
            REGW_STP: begin
                if (ulpi_stp) state <= IDLE;
            end
            REGR_ACK: begin
                ulpi_nxt <= 0;
                ulpi_dir <= 1;
                state <= REGR_TURN;
            end
            REGR_TURN: begin
                ulpi_data_i <= regs[reg_addr];
                state <= REGR_DATA;
            end
            REGR_DATA: begin
                ulpi_dir <= 0;
                ulpi_data_i <= 0;
                state <= IDLE;
            end
            RXCMD_TURN: begin
                ulpi_data_i <= rx_cmd(effective_linestate, 0);
                reported_linestate <= effective_linestate;
                state <= RXCMD_OUT;
            end
            RXCMD_OUT: begin
                ulpi_dir <= 0;
                ulpi_data_i <= 0;
                state <= IDLE;
            end
            RX_TURN: begin  // turnaround done: an RX CMD reports the line out of squelch
                ulpi_nxt <= 0;
                ulpi_data_i <= rx_cmd(LS_J, 1);
                state <= RX_BYTES;
            end
            RX_BYTES: begin
                if (rx_index == rx_len) begin
                    ulpi_nxt <= 0;
                    ulpi_data_i <= rx_cmd(LS_SE0, 0);  // EOP: RxActive low, squelch
                    reported_linestate <= LS_SE0;
                    state <= RX_END;
                end else if (rx_stall[rx_index] && !rx_stalled) begin
                    ulpi_nxt <= 0;
                    ulpi_data_i <= rx_cmd(LS_J, 1);
                    rx_stalled <= 1;
                end else begin
                    ulpi_nxt <= 1;
                    ulpi_data_i <= rx_data[8*rx_index +: 8];
                    rx_index <= rx_index + 1;
                    rx_stalled <= 0;
                end
            end
            RX_END: begin
                ulpi_dir <= 0;
                ulpi_data_i <= 0;
                rx_count <= rx_count + 1;
                rx_end_cycle <= cycle;
                state <= IDLE;
            end
            TX: begin
                if (ulpi_stp) begin
                    ulpi_nxt <= 0;
                    dev_chirp <= 0;
                    tx_end_cycle <= cycle;
                    if (!tx_chirp) tx_count <= tx_count + 1;
                    state <= IDLE;
                end else begin
                    logic [7:0] stuffed;
                    logic [4:0] acc;
                    acc = stuff_acc;
                    if (ulpi_nxt && !tx_first && !tx_chirp && tx_len < 16'(MAX_BYTES)) begin
                        tx_data[8*tx_len +: 8] <= ulpi_data_o;
                        tx_len <= tx_len + 1;
                        stuffed = stuff_byte(ulpi_data_o, stuff_run);
                        stuff_run <= stuffed[7:4];
                        acc = acc + 5'(stuffed[3:0]);
                        tx_stuffed <= tx_stuffed + 16'(stuffed[3:0]);
                        tx_crc16 <= crc16_byte(tx_crc16, ulpi_data_o);
                    end
                    tx_first <= 0;
                    // Every 8 stuffed bits cost the serialiser one byte time: hold nxt low.
                    if (ulpi_nxt && acc >= 8) begin
                        ulpi_nxt <= 0;
                        stuff_acc <= acc - 8;
                    end else begin
                        ulpi_nxt <= 1;
                        stuff_acc <= acc;
                    end
                end
            end
            default: state <= IDLE;
            endcase
        end
    end
endmodule
