/* busprobe PCIe board firmware: the console on the UART and the host's mailbox.
 *
 * Boot is short on purpose (the simulation runs it): the banner, the prompt, then a loop that
 * serves the mailbox and the console's line editor. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "hw.h"

#define LINE_MAX 80
#define ARGS_MAX 8

static void cmd_help(int argc, char **argv);

static const struct command {
    const char *name;
    void (*run)(int argc, char **argv);
    const char *usage;
} commands[] = {
    {"link", cmd_link, "link                 link state now and its history since reset"},
    {"counters", cmd_counters, "counters             link faults, pattern errors, read path"},
    {"telemetry", cmd_telemetry, "telemetry            every TLP telemetry counter"},
    {"dma", cmd_dma,
     "dma [write|read|both] [LENGTH[K|M]] [COUNT]\n"
     "                     device-run DMA through the host's buffer, device-timed"},
    {"help", cmd_help, "help                 this list"},
};

static void cmd_help(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        printf("help: takes no arguments\n");
        return;
    }
    for (unsigned i = 0; i < sizeof commands / sizeof commands[0]; i++)
        printf("%s\n", commands[i].usage);
}

static void run_line(char *line)
{
    char *argv[ARGS_MAX + 1];
    int argc = 0;
    for (char *word = strtok(line, " \t"); word; word = strtok(NULL, " \t")) {
        if (argc == ARGS_MAX) {
            printf("too many words (at most %d)\n", ARGS_MAX);
            return;
        }
        argv[argc++] = word;
    }
    if (argc == 0)
        return;
    for (unsigned i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[0], commands[i].name) == 0) {
            commands[i].run(argc, argv);
            return;
        }
    }
    printf("unknown command '%.20s': try help\n", argv[0]);
}

/* Line editing for a terminal: echo, backspace, CR or LF ends a line (LF after CR is not a
 * second, empty line). */
static void take(int c)
{
    static char line[LINE_MAX];
    static unsigned length;
    static int overflow, after_cr;

    if (c == '\n' && after_cr) {
        after_cr = 0;
        return;
    }
    after_cr = c == '\r';
    if (c == '\r' || c == '\n') {
        printf("\n");
        line[length] = 0;
        if (overflow)
            printf("line too long (at most %d characters)\n", LINE_MAX - 1);
        else
            run_line(line);
        length = 0;
        overflow = 0;
        printf("%s", BUSPROBE_SOC_PROMPT);
    } else if (c == 0x08 || c == 0x7f) {
        if (length) {
            length--;
            printf("\b \b");
        }
    } else if (c >= ' ' && c < 0x7f) {
        if (length < LINE_MAX - 1) {
            line[length++] = (char)c;
            uart_putc((char)c);
        } else {
            overflow = 1;
        }
    }
}

int main(void)
{
    char link[64];
    mailbox_start();
    link_summary(link, sizeof link);
    printf("\n%s %u (protocol %u, %s %s, %lu MHz): link %s; type help\n%s",
           BUSPROBE_SOC_BANNER, BUSPROBE_SOC_FIRMWARE_VERSION, BUSPROBE_PCIE_PROTOCOL_VERSION,
           BUSPROBE_SOC_CPU_TYPE, BUSPROBE_SOC_CPU_VARIANT, (unsigned long)(clock_hz() / 1000000u),
           link,
           BUSPROBE_SOC_PROMPT);
    for (;;) {
        mailbox_poll();
        int c = uart_getc();
        if (c >= 0)
            take(c);
    }
}
