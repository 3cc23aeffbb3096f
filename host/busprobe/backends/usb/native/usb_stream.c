/* busprobe's queued bulk stream in native code: what plans.QueuedStream + transfers.run_plan do
 * over libusb_queue.LibusbTransferQueue, without a Python call per completion.
 *
 * `count` bulk transfers of `length` bytes on one endpoint, `depth` of them in flight; every
 * completion is answered at once, from libusb's completion callback, with the next transfer
 * (libusb allows submitting from a callback), into the next slice of one buffer of
 * count x length bytes (IN data lands in place; OUT data is read from it). The host clock is
 * CLOCK_MONOTONIC, Python's time.perf_counter on Linux: the first submission and the last
 * completion, as run_plan reports them. Everything the Python path checks is kept: each
 * transfer's actual length, a STALL (the stream ends, as QueuedStream raises), a failed
 * transfer (its libusb status), a failed submission (its libusb error), and no completion for
 * `silence` seconds (a timeout); on any of them the transfers in flight are cancelled and
 * waited for before returning. So is a stop asked from outside (`*stop` set: the caller runs
 * this in a thread and sets it on Ctrl-C; seen within 0.1 s).
 *
 * libusb is not linked: bp_bind() takes the dlopen handle of the library python-libusb1 loaded
 * (or of the zero-latency stand-in, null_libusb.c) and looks the five functions up in it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libusb_abi.h"

struct bp_libusb {
    struct libusb_transfer *(*alloc)(int);
    void (*free)(struct libusb_transfer *);
    int (*submit)(struct libusb_transfer *);
    int (*cancel)(struct libusb_transfer *);
    int (*events)(void *, struct timeval *, int *);
};

/* What bp_stream reports; the outcome codes below. */
struct bp_result {
    int outcome;
    int index;      /* the transfer the outcome is about */
    int status;     /* its libusb transfer status, or the submission's libusb error */
    int completed;  /* transfers completed */
    double start, end;
};

enum { BP_OK = 0, BP_STALLED = 1, BP_FAILED = 2, BP_SUBMIT_ERROR = 3, BP_TIMEOUT = 4,
       BP_NO_MEMORY = 5, BP_STOPPED = 6 };

struct stream {
    const struct bp_libusb *lib;
    unsigned char *data;
    int *actual;
    int length, count, submitted, completed, in_flight, stop;
    struct bp_result *result;
    double last_progress;
};

struct slot { struct stream *stream; int index; };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int bp_bind(void *handle, struct bp_libusb *lib) {
    lib->alloc = (struct libusb_transfer *(*)(int))dlsym(handle, "libusb_alloc_transfer");
    lib->free = (void (*)(struct libusb_transfer *))dlsym(handle, "libusb_free_transfer");
    lib->submit = (int (*)(struct libusb_transfer *))dlsym(handle, "libusb_submit_transfer");
    lib->cancel = (int (*)(struct libusb_transfer *))dlsym(handle, "libusb_cancel_transfer");
    lib->events = (int (*)(void *, struct timeval *, int *))dlsym(
        handle, "libusb_handle_events_timeout_completed");
    return lib->alloc && lib->free && lib->submit && lib->cancel && lib->events ? 0 : -1;
}

size_t bp_sizes(int which) {
    return which == 0 ? sizeof(struct bp_libusb) : sizeof(struct bp_result);
}

static void fail(struct stream *s, int outcome, int index, int status) {
    if (!s->stop) {
        s->result->outcome = outcome;
        s->result->index = index;
        s->result->status = status;
    }
    s->stop = 1;
}

/* Point `t` at transfer `index` and submit it; 0, or the libusb error. */
static int submit(struct stream *s, struct libusb_transfer *t, int index) {
    struct slot *slot = (struct slot *)t->user_data;
    slot->index = index;
    t->buffer = s->data + (size_t)index * (size_t)s->length;
    t->length = s->length;
    t->actual_length = 0;
    int rc = s->lib->submit(t);
    if (rc == 0) {
        s->in_flight++;
        s->submitted++;
    }
    return rc;
}

static void completed(struct libusb_transfer *t) {
    struct slot *slot = (struct slot *)t->user_data;
    struct stream *s = slot->stream;
    double when = now();
    s->in_flight--;
    if (t->status == LIBUSB_TRANSFER_CANCELLED)
        return;
    if (t->status != LIBUSB_TRANSFER_COMPLETED && t->status != LIBUSB_TRANSFER_STALL) {
        fail(s, BP_FAILED, slot->index, t->status);
        return;
    }
    s->actual[slot->index] = t->actual_length;
    s->completed++;
    s->last_progress = when;
    if (when > s->result->end)
        s->result->end = when;
    if (t->status == LIBUSB_TRANSFER_STALL) {
        fail(s, BP_STALLED, slot->index, t->status);
        return;
    }
    if (!s->stop && s->submitted < s->count) {
        int rc = submit(s, t, s->submitted);
        if (rc != 0)
            fail(s, BP_SUBMIT_ERROR, s->submitted, rc);
    }
}

/* Run the stream (see the file's comment); fills `result`, returns its outcome. */
int bp_stream(const struct bp_libusb *lib, void *context, void *handle, int endpoint,
              int zlp, int length, int count, int depth, unsigned char *data, int *actual,
              double silence, struct bp_result *result, volatile int *stop) {
    struct stream s = {lib, data, actual, length, count, 0, 0, 0, 0, result, 0.0};
    memset(result, 0, sizeof *result);
    if (depth > count)
        depth = count;
    struct libusb_transfer **pool = calloc((size_t)depth, sizeof *pool);
    struct slot *slots = calloc((size_t)depth, sizeof *slots);
    if (!pool || !slots) {
        free(pool);
        free(slots);
        result->outcome = BP_NO_MEMORY;
        return BP_NO_MEMORY;
    }
    int made = 0;
    for (; made < depth; made++) {
        struct libusb_transfer *t = lib->alloc(0);
        if (!t)
            break;
        slots[made].stream = &s;
        t->dev_handle = handle;
        t->flags = zlp ? LIBUSB_TRANSFER_ADD_ZERO_PACKET : 0;
        t->endpoint = (unsigned char)endpoint;
        t->type = LIBUSB_TRANSFER_TYPE_BULK;
        t->timeout = 0;
        t->callback = completed;
        t->user_data = &slots[made];
        pool[made] = t;
    }
    if (made < depth)
        fail(&s, BP_NO_MEMORY, made, 0);
    result->start = now();
    result->end = result->start;
    s.last_progress = result->start;
    for (int i = 0; i < made && !s.stop; i++) {
        int rc = submit(&s, pool[i], i);
        if (rc != 0)
            fail(&s, BP_SUBMIT_ERROR, i, rc);
    }
    while (!s.stop && s.completed < count) {
        if (*stop) {
            fail(&s, BP_STOPPED, s.completed, 0);
            break;
        }
        double left = s.last_progress + silence - now();
        if (left <= 0) {
            fail(&s, BP_TIMEOUT, s.completed, 0);
            break;
        }
        if (left > 0.1)
            left = 0.1;
        struct timeval tv = {(time_t)left, (suseconds_t)((left - (double)(time_t)left) * 1e6)};
        lib->events(context, &tv, NULL);
    }
    if (s.in_flight > 0) {
        /* Stopped early: cancel what is in flight and wait (2 s at most) until it is back. */
        for (int i = 0; i < made; i++)
            lib->cancel(pool[i]);
        double deadline = now() + 2.0;
        while (s.in_flight > 0 && now() < deadline) {
            struct timeval tv = {0, 50000};
            lib->events(context, &tv, NULL);
        }
    }
    result->completed = s.completed;
    /* A transfer still in flight after the wait belongs to libusb: leave it allocated. */
    if (s.in_flight == 0) {
        for (int i = 0; i < made; i++)
            lib->free(pool[i]);
        free(slots);
    }
    free(pool);
    return result->outcome;
}
