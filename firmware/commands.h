/* The console's commands. Each prints its answer; a malformed call prints one line. */
#ifndef BUSPROBE_FIRMWARE_COMMANDS_H
#define BUSPROBE_FIRMWARE_COMMANDS_H

#include <stdint.h>

void cmd_link(int argc, char **argv);
void cmd_counters(int argc, char **argv);
void cmd_telemetry(int argc, char **argv);
void cmd_dma(int argc, char **argv);

/* One line for the banner: "up at 5.0 GT/s x1" or "down (Detect.Quiet)". */
void link_summary(char *out, unsigned size);

/* The device-run DMA (dma.c), for the console and the host's mailbox. */
struct dma_result {
    uint32_t bytes;        /* payload bytes moved (telemetry) */
    uint32_t span_cycles;  /* first TLP to last (telemetry) */
    uint32_t total_cycles; /* engine start to last descriptor done */
    uint32_t errors;       /* checker's pattern errors + link faults */
};
/* Runs `count` transfers of `length` bytes through the host buffer, back to back; returns a
 * BUSPROBE_FW_STATUS_*. */
uint32_t dma_run(uint32_t direction, uint32_t length, uint32_t count, uint32_t pattern,
                 struct dma_result *result);
/* Carries out a command the host left in the mailbox, if there is a new one. */
void mailbox_poll(void);
void mailbox_start(void);

#endif
