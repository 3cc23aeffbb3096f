/* The SoC as the firmware sees it: CSRs (offsets from the generated contract header), the UART,
 * the cycle counter and the timer. */
#ifndef BUSPROBE_FIRMWARE_HW_H
#define BUSPROBE_FIRMWARE_HW_H

#include <stdint.h>

#include "busprobe_protocol.h"

/* A CSR by its contract name: REG(BUSPROBE_PATTERN) is busprobe_pattern. The CPU sees BAR0
 * offset x at BUSPROBE_SOC_CSR_BASE + x. */
#define REG(name) (*(volatile uint32_t *)(BUSPROBE_SOC_CSR_BASE + BUSPROBE_PCIE_CSR_##name))
#define REG_AT(offset) (*(volatile uint32_t *)(BUSPROBE_SOC_CSR_BASE + (offset)))

/* A 64-bit status CSR (most significant word first), read so a carry between the two words
 * cannot tear it. */
uint64_t reg64(unsigned offset);

/* Core clock cycles since reset (the link history's clock). */
uint64_t cycles_now(void);
/* The core clock in Hz, as the core reports it. */
uint32_t clock_hz(void);

/* The timer as a one-shot: expires `cycles` core cycles from now. */
void timer_start(uint32_t cycles);
int timer_expired(void);

void uart_putc(char c);
/* The next received character, or -1 if none is waiting. */
int uart_getc(void);

/* Seconds and nanoseconds of a cycle count, for printing "%lu.%09lu". */
void cycles_to_s_ns(uint64_t cycles, unsigned long *seconds, unsigned long *nanos);

#endif
