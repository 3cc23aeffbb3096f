#!/bin/sh
# The SuperSpeed device in the xHCI guest (sourced by usb_checks.sh when SS_SELECTOR is set): the
# guest's xhci_hcd enumerates the exported SuperSpeed gateware at 5000M, lsusb decodes its BOS and
# endpoint companion descriptors, and the real busprobe sweeps it through usbfs. Throughput here
# is QEMU's emulated controller's, never a figure about hardware: one transfer per repeat at
# queue depth 1 (--min-transfers 1) is enough to check every byte of every shape, and two in
# flight check the queue (at 8, each 1 MiB repeat moved 8 MiB: 130 of the sweep's 155 s). The
# longest length is 256 KiB (the four 1 MiB points were most of the sweep's 64 s): 1 MiB is the
# unplug sweep's, below.
enumerated 300 '^5000$' speed ss-dmesg 'new SuperSpeed USB device'
# The device, not the SuperSpeed root hub (usbN, also at 5000, listed after it).
for dev in /sys/bus/usb/devices/[0-9]*; do
    if [ "$(cat "$dev/speed" 2>/dev/null)" = 5000 ] && [ -f "$dev/busnum" ]; then
        SS_BUS=$(cat "$dev/busnum"); SS_DEV=$(cat "$dev/devnum")
    fi
done
run ss-lsusb-t lsusb -t
run ss-lsusb-v lsusb -v -s "$SS_BUS:$SS_DEV"
run ss-list "$BUSPROBE" list
run ss-sweep "$BUSPROBE" sweep --device "$SS_SELECTOR" --direction both \
    --lengths 1023,64K,256K --queue-depth 1,2 --min-bytes 1 --min-transfers 1 --no-progress \
    --json "$OUT/ss-sweep.json"
# The host kills the SuperSpeed exporter at the first 1 MiB transfer of this sweep.
mark ss-unplug-started
run ss-unplug "$BUSPROBE" sweep --device "$SS_SELECTOR" --direction in --lengths 64K,1M \
    --queue-depth 1 --min-bytes 1 --no-progress --json "$OUT/ss-unplug.json"
