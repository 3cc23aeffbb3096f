/*
 * The user-space half of Linux's usbtest driver (drivers/usb/misc/usbtest.c), for the VM
 * harness: no Debian package ships testusb, so this small helper is compiled here (gcc -static,
 * sim/vm/usbtest.py) and run in the guest.
 *
 *   usbtest_helper DEVNODE test NUM ITERATIONS LENGTH VARY SGLEN
 *       one usbtest case on interface 0 (USBDEVFS_IOCTL, USBTEST_REQUEST): prints
 *       "usbtest NUM rc=0 seconds=S" or "usbtest NUM rc=-1 errno=E (text)"; exit status 0 or 1
 *   usbtest_helper DEVNODE vendor-out REQUEST VALUE
 *       a vendor request to the device without a data stage (USBDEVFS_CONTROL)
 *   usbtest_helper DEVNODE vendor-in REQUEST LENGTH
 *       a vendor request reading LENGTH bytes; prints them in hex on one line
 *
 * DEVNODE is /dev/bus/usb/BBB/DDD. The request codes come from the caller (busprobe.protocol),
 * so nothing here repeats the device's contract.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/usbdevice_fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* usbtest's parameter block as a 64-bit kernel reads it (struct usbtest_param_64: its
 * durations are 64-bit), and the request that carries it. */
struct usbtest_param_64 {
	uint32_t test_num;
	uint32_t iterations;
	uint32_t length;
	uint32_t vary;
	uint32_t sglen;
	int64_t duration_sec;
	int64_t duration_usec;
};
#define USBTEST_REQUEST_64 _IOWR('U', 100, struct usbtest_param_64)

static unsigned long number(const char *text)
{
	char *end;
	unsigned long value = strtoul(text, &end, 0);

	if (*text == '\0' || *end != '\0') {
		fprintf(stderr, "usbtest_helper: not a number: %s\n", text);
		exit(2);
	}
	return value;
}

static int run_test(int fd, char **argv)
{
	struct usbtest_param_64 param = {
		.test_num = number(argv[0]), .iterations = number(argv[1]),
		.length = number(argv[2]), .vary = number(argv[3]), .sglen = number(argv[4]),
	};
	struct usbdevfs_ioctl request = {
		.ifno = 0, .ioctl_code = USBTEST_REQUEST_64, .data = &param,
	};

	if (ioctl(fd, USBDEVFS_IOCTL, &request) < 0) {
		int error = errno;

		printf("usbtest %u rc=-1 errno=%d (%s)\n", param.test_num, error, strerror(error));
		return 1;
	}
	printf("usbtest %u rc=0 seconds=%lld.%06lld\n", param.test_num,
	       (long long)param.duration_sec, (long long)param.duration_usec);
	return 0;
}

static int vendor_out(int fd, char **argv)
{
	struct usbdevfs_ctrltransfer control = {
		.bRequestType = 0x40, /* vendor, host to device, device */
		.bRequest = number(argv[0]), .wValue = number(argv[1]), .wIndex = 0,
		.wLength = 0, .timeout = 10000, .data = NULL,
	};

	if (ioctl(fd, USBDEVFS_CONTROL, &control) < 0) {
		perror("usbtest_helper: vendor request");
		return 1;
	}
	return 0;
}

static int vendor_in(int fd, char **argv)
{
	unsigned char data[4096];
	unsigned long length = number(argv[1]);
	struct usbdevfs_ctrltransfer control = {
		.bRequestType = 0xC0, /* vendor, device to host, device */
		.bRequest = number(argv[0]), .wValue = 0, .wIndex = 0,
		.wLength = length, .timeout = 10000, .data = data,
	};
	int got, i;

	if (length > sizeof(data)) {
		fprintf(stderr, "usbtest_helper: at most %zu bytes\n", sizeof(data));
		return 2;
	}
	got = ioctl(fd, USBDEVFS_CONTROL, &control);
	if (got < 0) {
		perror("usbtest_helper: vendor request");
		return 1;
	}
	for (i = 0; i < got; i++)
		printf("%02x", data[i]);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	int fd, status;
	const char *mode = argc > 2 ? argv[2] : "";

	if (!((argc == 8 && strcmp(mode, "test") == 0)
	      || (argc == 5 && (strcmp(mode, "vendor-out") == 0
				|| strcmp(mode, "vendor-in") == 0)))) {
		fprintf(stderr, "usage: %s DEVNODE test NUM ITERATIONS LENGTH VARY SGLEN\n"
			"       %s DEVNODE vendor-out REQUEST VALUE\n"
			"       %s DEVNODE vendor-in REQUEST LENGTH\n", argv[0], argv[0], argv[0]);
		return 2;
	}
	fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "usbtest_helper: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	if (strcmp(mode, "test") == 0)
		status = run_test(fd, argv + 3);
	else if (strcmp(mode, "vendor-out") == 0)
		status = vendor_out(fd, argv + 3);
	else
		status = vendor_in(fd, argv + 3);
	fflush(stdout);
	close(fd);
	return status;
}
