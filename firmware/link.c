/* `link`: the link state now and every change since reset (the core's link history). */
#include <stdio.h>

#include "commands.h"
#include "hw.h"

#define FIELD(state, name) \
    (((state) >> BUSPROBE_LINK_##name##_LSB) & ((1u << BUSPROBE_LINK_##name##_BITS) - 1))

static const char *ltssm(uint32_t state)
{
    const char *name = busprobe_ltssm_names[FIELD(state, LTSSM)];
    return name ? name : "reserved";
}

static const char *speed(uint32_t state)
{
    static const char *const speeds[] = {"2.5", "5.0", "8.0", "16.0"};
    return speeds[FIELD(state, RATE)];
}

/* "up, L0, 5.0 GT/s x1, MPS 256 B, MRRS 512 B" */
static void describe(uint32_t state, char *out, unsigned size)
{
    snprintf(out, size, "%s, %s, %s GT/s x%u, MPS %u B, MRRS %u B",
             FIELD(state, UP) ? "up" : "down", ltssm(state), speed(state),
             1u << FIELD(state, WIDTH), 128u << FIELD(state, MPS), 128u << FIELD(state, MRRS));
}

void link_summary(char *out, unsigned size)
{
    uint32_t state = REG(LINK_STATE);
    if (FIELD(state, UP))
        snprintf(out, size, "up at %s GT/s x%u", speed(state), 1u << FIELD(state, WIDTH));
    else
        snprintf(out, size, "down (%s)", ltssm(state));
}

void cmd_link(int argc, char **argv)
{
    char text[96];
    unsigned long seconds, nanos;
    (void)argv;
    if (argc > 1) {
        printf("link: takes no arguments\n");
        return;
    }
    describe(REG(LINK_STATE), text, sizeof text);
    cycles_to_s_ns(cycles_now(), &seconds, &nanos);
    printf("link: %s (Device Control sizes), at %lu.%09lu s\n", text, seconds, nanos);
    uint32_t count = REG(LINK_COUNT);
    uint32_t kept = count < BUSPROBE_SOC_LINK_HISTORY_DEPTH ? count
                                                            : BUSPROBE_SOC_LINK_HISTORY_DEPTH;
    printf("history: %lu changes since reset", (unsigned long)count);
    if (kept < count)
        printf(", the last %lu kept", (unsigned long)kept);
    printf("\n");
    for (uint32_t i = count - kept; i != count; i++) {
        REG(LINK_SELECT) = i;
        uint32_t state = REG(LINK_ENTRY_STATE);
        cycles_to_s_ns(reg64(BUSPROBE_PCIE_CSR_LINK_ENTRY_TIME), &seconds, &nanos);
        describe(state, text, sizeof text);
        printf("  %lu.%09lu s  %s\n", seconds, nanos, text);
    }
}
