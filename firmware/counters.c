/* `counters` (what went wrong: link faults, pattern errors, the read path) and `telemetry`
 * (every TLP counter of the contract, by name). */
#include <stdio.h>

#include "commands.h"
#include "hw.h"

static const struct busprobe_counter stream[] = {
    {"pattern_errors", BUSPROBE_PCIE_CSR_BUSPROBE_PATTERN_ERRORS},
    {"checked_bytes", BUSPROBE_PCIE_CSR_BUSPROBE_CHECKED_BYTES},
    {"generated_bytes", BUSPROBE_PCIE_CSR_BUSPROBE_GENERATED_BYTES},
};

static int no_arguments(int argc, const char *name)
{
    if (argc > 1)
        printf("%s: takes no arguments\n", name);
    return argc <= 1;
}

void cmd_counters(int argc, char **argv)
{
    (void)argv;
    if (!no_arguments(argc, "counters"))
        return;
    for (unsigned i = 0; i < BUSPROBE_PCIE_FAULTS_COUNT; i++)
        printf("%-18s %lu\n", busprobe_pcie_faults[i].name,
               (unsigned long)REG_AT(busprobe_pcie_faults[i].offset));
    for (unsigned i = 0; i < sizeof stream / sizeof stream[0]; i++)
        printf("%-18s %lu\n", stream[i].name, (unsigned long)REG_AT(stream[i].offset));
    uint32_t first = REG(BUSPROBE_FIRST_ERROR_OFFSET);
    if (first == BUSPROBE_NO_ERROR_OFFSET)
        printf("%-18s none\n", "first_error_offset");
    else
        printf("%-18s %lu\n", "first_error_offset", (unsigned long)first);
    uint32_t status = REG(BUSPROBE_RD_STATUS);
    printf("%-18s %s%s\n", "read path", status & BUSPROBE_PCIE_RD_FAILED ? "FAILED" : "ok",
           status & BUSPROBE_PCIE_RD_RESET_PENDING ? ", reset pending" : "");
}

void cmd_telemetry(int argc, char **argv)
{
    (void)argv;
    if (!no_arguments(argc, "telemetry"))
        return;
    for (unsigned i = 0; i < BUSPROBE_PCIE_TELEMETRY_COUNT; i++)
        printf("%-20s %lu\n", busprobe_pcie_telemetry[i].name,
               (unsigned long)REG_AT(busprobe_pcie_telemetry[i].offset));
}
