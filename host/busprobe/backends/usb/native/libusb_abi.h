/* The part of libusb-1.0's ABI the native stream uses, as libusb.h (1.0.x) declares it.
 *
 * Declared here instead of including <libusb.h>: busprobe builds its native code on machines
 * that have the libusb runtime (the system's, or the libusb-package wheel's) but not its
 * development headers, and loads the library python-libusb1 loaded, by handle. The layout of
 * struct libusb_transfer and the values below are libusb's stable ABI since 1.0.0.
 */
#ifndef BUSPROBE_LIBUSB_ABI_H
#define BUSPROBE_LIBUSB_ABI_H

#include <stdint.h>
#include <sys/time.h>

struct libusb_transfer;
typedef void (*libusb_transfer_cb_fn)(struct libusb_transfer *transfer);

struct libusb_iso_packet_descriptor {
    unsigned int length;
    unsigned int actual_length;
    int status;
};

struct libusb_transfer {
    void *dev_handle;
    uint8_t flags;
    unsigned char endpoint;
    unsigned char type;
    unsigned int timeout;
    int status;
    int length;
    int actual_length;
    libusb_transfer_cb_fn callback;
    void *user_data;
    unsigned char *buffer;
    int num_iso_packets;
    struct libusb_iso_packet_descriptor iso_packet_desc[];
};

enum {
    LIBUSB_TRANSFER_TYPE_BULK = 2,
    LIBUSB_TRANSFER_ADD_ZERO_PACKET = 1 << 3,
};

enum {
    LIBUSB_TRANSFER_COMPLETED = 0,
    LIBUSB_TRANSFER_ERROR = 1,
    LIBUSB_TRANSFER_TIMED_OUT = 2,
    LIBUSB_TRANSFER_CANCELLED = 3,
    LIBUSB_TRANSFER_STALL = 4,
    LIBUSB_TRANSFER_NO_DEVICE = 5,
    LIBUSB_TRANSFER_OVERFLOW = 6,
};

#endif
