/* A zero-latency libusb: what the host path costs with the device and the bus out of the way.
 *
 * Loaded in place of libusb-1.0 (it links the real one, so every function it does not define
 * is libusb's own), it defines the asynchronous-transfer calls and one device. A submitted
 * transfer completes, all of its bytes moved and its buffer untouched (a device's DMA costs the
 * CPU nothing), in the next libusb_handle_events* call, which runs its callback as libusb does.
 * So a stream run against it spends its time only in the host tool and the library calls it
 * makes (busprobe's queue, python-libusb1, the native stream), never waiting: its completions
 * per second bound what that code can sustain on this machine. What it leaves out is the
 * kernel's part (usbfs' submit and reap ioctls, the URB, the host controller driver and its
 * interrupt), which a real port adds on top.
 *
 * Enough of the rest for python-libusb1 to hold a context and a handle (busprobe.tool_ceiling
 * makes its objects directly), and one fault for the native stream's tests (bp_null_fault).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/time.h>

#include "libusb_abi.h"

static struct libusb_transfer **pending;
static int pending_count, pending_room;
/* One fault for tests (bp_null_fault): the transfer submitted as number `fault_at` completes
 * with `fault_status` and `fault_actual` bytes, or never (a status below 0) until cancelled. */
static long submitted_total, fault_at = -1;
static int fault_status, fault_actual;
static struct libusb_transfer *faulty;

void bp_null_fault(int after, int status, int actual) {
    fault_at = submitted_total + after;
    fault_status = status;
    fault_actual = actual;
    faulty = NULL;
}

/* ... and the submission number `after` from now fails with libusb error `error`. */
static long refuse_at = -1;
static int refuse_error;

void bp_null_refuse(int after, int error) {
    refuse_at = submitted_total + after;
    refuse_error = error;
}

int bp_null_pending(void) { return pending_count; }

struct libusb_transfer *libusb_alloc_transfer(int iso_packets) {
    size_t size = sizeof(struct libusb_transfer)
        + (size_t)iso_packets * sizeof(struct libusb_iso_packet_descriptor);
    struct libusb_transfer *t = calloc(1, size);
    if (t)
        t->num_iso_packets = iso_packets;
    return t;
}

void libusb_free_transfer(struct libusb_transfer *t) { free(t); }

int libusb_submit_transfer(struct libusb_transfer *t) {
    if (pending_count == pending_room) {
        int room = pending_room ? 2 * pending_room : 64;
        struct libusb_transfer **grown = realloc(pending, (size_t)room * sizeof *grown);
        if (!grown)
            return -11; /* LIBUSB_ERROR_NO_MEM */
        pending_room = room;
        pending = grown;
    }
    if (submitted_total == refuse_at) {
        refuse_at = -1;
        return refuse_error;
    }
    if (submitted_total++ == fault_at)
        faulty = t;
    pending[pending_count++] = t;
    return 0;
}

int libusb_cancel_transfer(struct libusb_transfer *t) {
    for (int i = 0; i < pending_count; i++) {
        if (pending[i] == t) {
            t->status = LIBUSB_TRANSFER_CANCELLED;
            if (t == faulty)
                faulty = NULL;
            return 0;
        }
    }
    return -5; /* LIBUSB_ERROR_NOT_FOUND */
}

static int complete_all(void) {
    /* What is pending now completes; what its callbacks submit waits for the next call, as a
     * bus would make it. */
    int count = pending_count;
    if (count == 0)
        return 0;
    struct libusb_transfer **taken = malloc((size_t)count * sizeof *taken);
    if (!taken)
        return -11; /* LIBUSB_ERROR_NO_MEM */
    memcpy(taken, pending, (size_t)count * sizeof *taken);
    pending_count = 0;
    for (int i = 0; i < count; i++) {
        struct libusb_transfer *t = taken[i];
        if (t->status != LIBUSB_TRANSFER_CANCELLED) {
            t->status = LIBUSB_TRANSFER_COMPLETED;
            t->actual_length = t->length;
            if (t == faulty) {
                if (fault_status < 0) { /* lost: it stays until cancelled */
                    pending[pending_count++] = t;
                    continue;
                }
                t->status = fault_status;
                t->actual_length = fault_actual;
                faulty = NULL;
            }
        }
        t->callback(t);
    }
    free(taken);
    return 0;
}

int libusb_handle_events_timeout_completed(void *ctx, struct timeval *tv, int *completed) {
    (void)ctx; (void)tv; (void)completed;
    return complete_all();
}

int libusb_handle_events_timeout(void *ctx, struct timeval *tv) {
    (void)ctx; (void)tv;
    return complete_all();
}

int libusb_handle_events(void *ctx) { (void)ctx; return complete_all(); }

int libusb_handle_events_completed(void *ctx, int *completed) {
    (void)ctx; (void)completed;
    return complete_all();
}

/* A context and a handle python-libusb1 can hold: libusb's own would look for devices. */
static int null_context;

int libusb_init_context(void **ctx, const void *options, int count) {
    (void)options; (void)count;
    if (ctx)
        *ctx = &null_context;
    return 0;
}

int libusb_init(void **ctx) { return libusb_init_context(ctx, NULL, 0); }

void libusb_exit(void *ctx) { (void)ctx; }

void libusb_close(void *handle) { (void)handle; }
