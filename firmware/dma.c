/* The device-run DMA: the engine moves data between the core and the buffer the host tool
 * allocated and pinned, timed by the core's telemetry, with no host software in the loop.
 * The host publishes the buffer and asks for runs through the mailbox (busprobe.protocol.
 * pcie_soc); `dma` on the console runs the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "hw.h"

#define PAGE 4096u

/* One engine's registers (writer or reader). */
struct engine {
    unsigned enable, value, we, prog_n, status, reset;
};

static const struct engine writer = {
    BUSPROBE_PCIE_CSR_PCIE_DMA0_WRITER_ENABLE, BUSPROBE_PCIE_CSR_PCIE_DMA0_WRITER_TABLE_VALUE,
    BUSPROBE_PCIE_CSR_PCIE_DMA0_WRITER_TABLE_WE,
    BUSPROBE_PCIE_CSR_PCIE_DMA0_WRITER_TABLE_LOOP_PROG_N,
    BUSPROBE_PCIE_CSR_PCIE_DMA0_WRITER_TABLE_LOOP_STATUS,
    BUSPROBE_PCIE_CSR_PCIE_DMA0_WRITER_TABLE_RESET};
static const struct engine reader = {
    BUSPROBE_PCIE_CSR_PCIE_DMA0_READER_ENABLE, BUSPROBE_PCIE_CSR_PCIE_DMA0_READER_TABLE_VALUE,
    BUSPROBE_PCIE_CSR_PCIE_DMA0_READER_TABLE_WE,
    BUSPROBE_PCIE_CSR_PCIE_DMA0_READER_TABLE_LOOP_PROG_N,
    BUSPROBE_PCIE_CSR_PCIE_DMA0_READER_TABLE_LOOP_STATUS,
    BUSPROBE_PCIE_CSR_PCIE_DMA0_READER_TABLE_RESET};

static void stop(const struct engine *e)
{
    REG_AT(e->enable) = 0;
    REG_AT(e->prog_n) = 0;
    REG_AT(e->reset) = 1;
}

/* Both engines stopped, their tables empty, the read path reset (as the host driver's reset). */
static int quiesce(void)
{
    REG(PCIE_DMA0_LOOPBACK_ENABLE) = 0;
    stop(&writer);
    stop(&reader);
    REG(BUSPROBE_READ_RESET) = 1;
    timer_start(clock_hz() / 100);
    while (REG(BUSPROBE_RD_STATUS) & BUSPROBE_PCIE_RD_RESET_PENDING)
        if (timer_expired())
            return 0;
    return 1;
}

static uint32_t link_faults(void)
{
    return REG(BUSPROBE_RX_MALFORMED) + REG(BUSPROBE_RX_POISONED) +
           REG(BUSPROBE_RD_CPL_UNEXPECTED) + REG(BUSPROBE_RD_CPL_STATUS) +
           REG(BUSPROBE_RD_CPL_MISMATCH) + REG(BUSPROBE_RD_CPL_TIMEOUTS);
}

uint32_t dma_run(uint32_t direction, uint32_t length, uint32_t count, uint32_t pattern,
                 struct dma_result *result)
{
    uint32_t buffer = REG(FIRMWARE_BUFFER), size = REG(FIRMWARE_BUFFER_SIZE);
    uint64_t total = (uint64_t)length * count;
    memset(result, 0, sizeof *result);
    if (direction > BUSPROBE_FW_DIRECTION_READ || !length || !count ||
        length % BUSPROBE_PCIE_DMA_LENGTH_ALIGN || total >= (1ull << 32))
        return BUSPROBE_FW_STATUS_BAD_REQUEST;
    if (!size || buffer % BUSPROBE_PCIE_DMA_ADDRESS_ALIGN || total > size)
        return BUSPROBE_FW_STATUS_NO_BUFFER;
    const struct engine *e = direction == BUSPROBE_FW_DIRECTION_WRITE ? &writer : &reader;
    if (!quiesce())
        return BUSPROBE_FW_STATUS_TIMEOUT;
    REG(BUSPROBE_PATTERN) = pattern; /* restarts generator and checker */
    REG(BUSPROBE_TELEMETRY_CLEAR) = 1;
    /* At least 10 MB/s, and a millisecond to start: only a dead link takes longer. */
    timer_start(clock_hz() / 1000 + (uint32_t)(total * (clock_hz() / 1000000u) / 10));
    uint64_t start = cycles_now();
    REG_AT(e->enable) = BUSPROBE_PCIE_DMA_ENABLE;
    uint32_t pushed = 0, done = 0, flags = BUSPROBE_PCIE_DESC_IRQ_DISABLE |
                                           BUSPROBE_PCIE_DESC_LAST_DISABLE;
    uint32_t address = buffer, end = buffer + (uint32_t)total, last_word = 0;
    while (address != end) {
        if (pushed - done == BUSPROBE_PCIE_DMA_TABLE_DEPTH) {
            done = REG_AT(e->status);
            if (timer_expired())
                goto timeout;
            continue;
        }
        /* A descriptor ends at a transfer's end and never crosses a 4 KiB page. */
        uint32_t offset = address - buffer, transfer_end = buffer + (offset / length + 1) * length;
        uint32_t page_end = (address / PAGE + 1) * PAGE;
        uint32_t chunk = (page_end < transfer_end ? page_end : transfer_end) - address;
        if (last_word != (chunk | flags)) { /* table_value keeps its words */
            last_word = chunk | flags;
            REG_AT(e->value) = last_word;
        }
        REG_AT(e->value + 4) = address;
        REG_AT(e->we) = 0; /* address bits 32-63 */
        address += chunk;
        pushed++;
    }
    while (done != pushed) {
        done = REG_AT(e->status);
        if (timer_expired())
            goto timeout;
    }
    /* The last descriptor is taken: wait for its data to leave (write) or be checked (read). */
    unsigned moved = direction == BUSPROBE_FW_DIRECTION_WRITE ? BUSPROBE_PCIE_CSR_BUSPROBE_WR_BYTES
                                                              : BUSPROBE_PCIE_CSR_BUSPROBE_CHECKED_BYTES;
    while (REG_AT(moved) != (uint32_t)total) {
        if (REG(BUSPROBE_RD_STATUS) & BUSPROBE_PCIE_RD_FAILED) {
            quiesce();
            return BUSPROBE_FW_STATUS_READ_FAILED;
        }
        if (timer_expired())
            goto timeout;
    }
    if (direction == BUSPROBE_FW_DIRECTION_WRITE) {
        /* Posted writes are done when they leave, not when they land: a root complex may
         * still hold some (a slow chipset holds a credit window's worth). A read that follows
         * them may not pass them (PCIe ordering), so its completion ends the run: 8 bytes from
         * the buffer's start, which hold this run's first pattern bytes, what the restarted
         * checker expects. */
        REG_AT(e->enable) = 0;
        REG_AT(reader.enable) = BUSPROBE_PCIE_DMA_ENABLE;
        REG_AT(reader.value) = BUSPROBE_PCIE_DMA_LENGTH_ALIGN | flags;
        REG_AT(reader.value + 4) = buffer;
        REG_AT(reader.we) = 0;
        while (REG(BUSPROBE_CHECKED_BYTES) != BUSPROBE_PCIE_DMA_LENGTH_ALIGN)
            if (timer_expired() || (REG(BUSPROBE_RD_STATUS) & BUSPROBE_PCIE_RD_FAILED))
                goto timeout;
        REG_AT(reader.enable) = 0;
    }
    result->total_cycles = (uint32_t)(cycles_now() - start);
    if (direction == BUSPROBE_FW_DIRECTION_WRITE) {
        result->bytes = REG(BUSPROBE_WR_BYTES);
        result->span_cycles = REG(BUSPROBE_RD_LAST_CYCLE) - REG(BUSPROBE_WR_FIRST_CYCLE) + 1;
        result->errors = REG(BUSPROBE_PATTERN_ERRORS) + link_faults();
    } else {
        result->bytes = REG(BUSPROBE_RD_BYTES);
        result->span_cycles = REG(BUSPROBE_RD_LAST_CYCLE) - REG(BUSPROBE_RD_FIRST_CYCLE) + 1;
        result->errors = REG(BUSPROBE_PATTERN_ERRORS) + link_faults();
    }
    REG_AT(e->enable) = 0;
    return BUSPROBE_FW_STATUS_DONE;
timeout:
    quiesce();
    return BUSPROBE_FW_STATUS_TIMEOUT;
}

/* -- the mailbox --------------------------------------------------------------------------- */

static uint32_t seen; /* sequence of the last command carried out */

void mailbox_start(void)
{
    seen = REG(FIRMWARE_COMMAND) >> 8;
    REG(FIRMWARE_VERSION) = BUSPROBE_SOC_FIRMWARE_VERSION;
    REG(FIRMWARE_MAGIC) = BUSPROBE_SOC_FIRMWARE_MAGIC; /* last: the host may ask from now on */
}

void mailbox_poll(void)
{
    uint32_t command = REG(FIRMWARE_COMMAND);
    if (command >> 8 == seen)
        return;
    seen = command >> 8;
    struct dma_result r;
    uint32_t status = BUSPROBE_FW_STATUS_BAD_REQUEST;
    memset(&r, 0, sizeof r);
    if ((command & 0xff) == BUSPROBE_FW_COMMAND_DMA)
        status = dma_run(REG(FIRMWARE_DIRECTION), REG(FIRMWARE_LENGTH), REG(FIRMWARE_COUNT),
                         REG(FIRMWARE_PATTERN), &r);
    REG(FIRMWARE_BYTES) = r.bytes;
    REG(FIRMWARE_SPAN_CYCLES) = r.span_cycles;
    REG(FIRMWARE_TOTAL_CYCLES) = r.total_cycles;
    REG(FIRMWARE_ERRORS) = r.errors;
    REG(FIRMWARE_STATUS) = seen << 8 | status;
    REG(FIRMWARE_IRQ) = 1;
}

/* -- the console's `dma` -------------------------------------------------------------------- */

static const char *const status_text[] = {
    [BUSPROBE_FW_STATUS_NO_BUFFER] = "the host buffer is missing or too small: start the "
                                     "console with busprobe console --device (it allocates one)",
    [BUSPROBE_FW_STATUS_BAD_REQUEST] = "bad request",
    [BUSPROBE_FW_STATUS_TIMEOUT] = "timed out: is the link up and bus mastering enabled?",
    [BUSPROBE_FW_STATUS_READ_FAILED] = "a read failed on the link (see counters)",
};

/* "64K" -> 65536; 0 when malformed. */
static uint32_t parse_size(const char *text)
{
    char *end;
    unsigned long value = strtoul(text, &end, 10);
    if (end == text)
        return 0;
    if (*end == 'K' || *end == 'k')
        value <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        value <<= 20, end++;
    return *end || value > 0xffffffffu ? 0 : (uint32_t)value;
}

static int point(uint32_t direction, uint32_t length, uint32_t count)
{
    struct dma_result r;
    uint32_t status = dma_run(direction, length, count, BUSPROBE_PATTERN_COUNTER, &r);
    const char *name = direction == BUSPROBE_FW_DIRECTION_WRITE ? "write" : "read";
    if (status != BUSPROBE_FW_STATUS_DONE) {
        printf("dma %s %lu x %lu: %s\n", name, (unsigned long)length, (unsigned long)count,
               status_text[status]);
        return 0;
    }
    /* bytes/s = bytes * clock / cycles; printed in MB/s with two decimals. */
    uint64_t rate = (uint64_t)r.bytes * clock_hz() / r.span_cycles / 10000u;
    uint64_t ns = (uint64_t)r.span_cycles * 1000000000u / clock_hz();
    printf("%-5s %8lu B x %-4lu %9lu B in %6lu.%03lu us = %4lu.%02lu MB/s, %lu errors\n", name,
           (unsigned long)length, (unsigned long)count, (unsigned long)r.bytes,
           (unsigned long)(ns / 1000), (unsigned long)(ns % 1000), (unsigned long)(rate / 100),
           (unsigned long)(rate % 100), (unsigned long)r.errors);
    return 1;
}

void cmd_dma(int argc, char **argv)
{
    static const uint32_t ladder[] = {4096, 16384, 65536, 262144, 1048576};
    int directions = 3, arg = 1; /* bit 0: write, bit 1: read */
    uint32_t length = 0, count = 0, size = REG(FIRMWARE_BUFFER_SIZE);
    if (arg < argc && strcmp(argv[arg], "write") == 0)
        directions = 1, arg++;
    else if (arg < argc && strcmp(argv[arg], "read") == 0)
        directions = 2, arg++;
    else if (arg < argc && strcmp(argv[arg], "both") == 0)
        arg++;
    if (arg < argc && !(length = parse_size(argv[arg++]))) {
        printf("dma: bad length '%.20s' (bytes, K or M: e.g. 64K)\n", argv[arg - 1]);
        return;
    }
    if (arg < argc && !(count = parse_size(argv[arg++]))) {
        printf("dma: bad count '%.20s'\n", argv[arg - 1]);
        return;
    }
    if (arg < argc) {
        printf("usage: dma [write|read|both] [LENGTH[K|M]] [COUNT]\n");
        return;
    }
    if (!size) {
        printf("dma: %s\n", status_text[BUSPROBE_FW_STATUS_NO_BUFFER]);
        return;
    }
    if (length % BUSPROBE_PCIE_DMA_LENGTH_ALIGN) {
        printf("dma: length %lu is not a multiple of %u bytes\n", (unsigned long)length,
               BUSPROBE_PCIE_DMA_LENGTH_ALIGN);
        return;
    }
    /* Each point fills the buffer (at most 1 MiB) unless COUNT says otherwise; writes first, so
     * reads check the pattern the writes left there. */
    uint32_t volume = size < (1u << 20) ? size : (1u << 20);
    for (int d = 0; d < 2; d++) {
        if (!(directions & (1 << d)))
            continue;
        for (unsigned i = 0; i < sizeof ladder / sizeof ladder[0]; i++) {
            uint32_t n = length ? length : ladder[i];
            if (n > volume && !count) {
                if (length)
                    printf("dma: %lu bytes do not fit the host buffer of %lu\n",
                           (unsigned long)n, (unsigned long)size);
                break;
            }
            if (!point(d == 0 ? BUSPROBE_FW_DIRECTION_WRITE : BUSPROBE_FW_DIRECTION_READ, n,
                       count ? count : volume / n) || length)
                break;
        }
    }
}
