/* The SoC's UART (LiteX: rxtx, txfull, rxempty; a received character is popped by clearing the
 * RX event), the link history's 64-bit cycle counter and LiteX's timer0, and stdout. */
#include "hw.h"

#include <stdio.h>

enum { UART_EV_RX = 1 << 1 };

uint64_t reg64(unsigned offset)
{
    uint32_t high, low;
    do {
        high = REG_AT(offset);
        low = REG_AT(offset + 4);
    } while (REG_AT(offset) != high);
    return ((uint64_t)high << 32) | low;
}

uint64_t cycles_now(void) { return reg64(BUSPROBE_PCIE_CSR_LINK_TIME); }

uint32_t clock_hz(void) { return REG(BUSPROBE_CLOCK_HZ); }

void timer_start(uint32_t cycles)
{
    REG(TIMER0_EN) = 0;
    REG(TIMER0_RELOAD) = 0;
    REG(TIMER0_LOAD) = cycles;
    REG(TIMER0_EN) = 1;
}

int timer_expired(void)
{
    REG(TIMER0_UPDATE_VALUE) = 1;
    return REG(TIMER0_VALUE) == 0;
}

void uart_putc(char c)
{
    while (REG(UART_TXFULL))
        ;
    REG(UART_RXTX) = (uint8_t)c;
}

int uart_getc(void)
{
    if (REG(UART_RXEMPTY))
        return -1;
    int c = REG(UART_RXTX) & 0xff;
    REG(UART_EV_PENDING) = UART_EV_RX;
    return c;
}

void cycles_to_s_ns(uint64_t cycles, unsigned long *seconds, unsigned long *nanos)
{
    uint32_t hz = clock_hz();
    *seconds = (unsigned long)(cycles / hz);
    *nanos = (unsigned long)((cycles % hz) * 1000000000u / hz);
}

/* picolibc's stdout: every character to the UART, a newline as CR LF for terminals. */
static int put(char c, FILE *file)
{
    (void)file;
    if (c == '\n')
        uart_putc('\r');
    uart_putc(c);
    return (unsigned char)c;
}

static FILE uart_file = FDEV_SETUP_STREAM(put, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdout = &uart_file;
