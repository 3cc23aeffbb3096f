#!/bin/sh
# One USB pass inside the guest (docs/DESIGN.md §7.1): the real busprobe, its libusb backend and
# the guest kernel's sysfs against the exported simulated device. Run by the initramfs's /init
# with the host's root filesystem as its root (read-only below a tmpfs overlay).
#
# $1: the run's output folder, shared with the host at the same path. guest.env there sets
# BUSPROBE (the busprobe command), RULE (the shipped udev rule) and SELECTOR (with its serial: the
# SuperSpeed device, SS_SELECTOR, exported beside it behind xHCI, has the same VID:PID), and what
# the usbtest step needs (sim/vm/usbtest.py: the module, the helper, the request codes).
# Every result line starts with BUSPROBE-VM; each command's output goes to $1/NAME.out/.err.
OUT=$1
. "$(dirname "$0")/common.sh"
SMALL="--direction in --lengths 4K --queue-depth 1 --min-bytes 1 --no-progress"

enumerated 150 '^1209$' idVendor dmesg 'new high-speed USB device'

run list "$BUSPROBE" list
run topology "$BUSPROBE" topology --device "$SELECTOR" --json
run sweep "$BUSPROBE" sweep --device "$SELECTOR" --direction both --lengths 511,4K,64K \
    --queue-depth 1,8 --min-bytes 1 --no-progress --json "$OUT/sweep.json"

# A user who is not root, in plugdev, before and after the shipped udev rule is applied (behind
# one controller: PERMISSIONS).
if [ -n "$PERMISSIONS" ]; then
    PLUGDEV=$(getent group plugdev | cut -d: -f3)
    USER_RUN="setpriv --reuid=65534 --regid=65534 --groups=$PLUGDEV"
    reachable "$BUSPROBE"
    run denied $USER_RUN "$BUSPROBE" sweep --device "$SELECTOR" $SMALL
    run list-denied $USER_RUN "$BUSPROBE" list
    mark "list-denied-note $(grep -m1 -o 'no permission to open it: .*' "$OUT/list-denied.out")"
    mkdir -p /run/udev/rules.d && cp "$RULE" /run/udev/rules.d/
    /lib/systemd/systemd-udevd --daemon > "$OUT/udevd.out" 2>&1
    udevadm trigger --action=add --subsystem-match=usb && udevadm settle --timeout=30
    ls -l /dev/bus/usb/*/* > "$OUT/devnodes.txt" 2>&1
    run allowed $USER_RUN "$BUSPROBE" sweep --device "$SELECTOR" $SMALL --json "$OUT/user/allowed.json"
fi

# Ctrl-C with queue-depth-8 transfers in flight (the sweep needs minutes, so it is running):
# libusb cancels them through the guest kernel, the device works for the next run at once.
"$BUSPROBE" sweep --device "$SELECTOR" --direction in --lengths 64K --queue-depth 8 \
    --min-bytes 4M --no-progress > "$OUT/interrupted.out" 2> "$OUT/interrupted.err" &
pid=$!
i=0
while [ $i -lt 300 ] && ! grep -qs '^sweeping' "$OUT/interrupted.err"; do
    sleep 0.1; i=$((i + 1))
done
sleep 3
kill -INT $pid
wait $pid
mark "interrupted rc=$? $(grep -m1 '^busprobe: ' "$OUT/interrupted.err")"
run after-interrupt "$BUSPROBE" sweep --device "$SELECTOR" $SMALL --json "$OUT/after-interrupt.json"

# Linux's usbtest against the device in its MOD63 data mode (sim/vm/usbtest.py): bound by its
# module parameters, each case of usbtest-cases.txt run through usbfs by the helper; then the
# device's telemetry (what it sent and took), and back to the PATTERN mode.
# The USB 2.0 device by its serial (behind xHCI the SuperSpeed one has the same VID:PID).
for d in /sys/bus/usb/devices/*; do
    [ "$(cat "$d/serial" 2>/dev/null)" = "$USB2_SERIAL" ] || continue
    DEVNODE=$(printf '/dev/bus/usb/%03d/%03d' "$(cat "$d/busnum")" "$(cat "$d/devnum")")
done
run usbtest-mod63 "$USBTEST_HELPER" "$DEVNODE" vendor-out "$SET_DATA_MODE" "$MOD63"
# Full packets, whatever transfer length the last sweep left (usbtest reads whole packets).
run usbtest-unframed "$USBTEST_HELPER" "$DEVNODE" vendor-out "$SET_IN_TRANSFER" 0
run usbtest-clear "$USBTEST_HELPER" "$DEVNODE" vendor-out "$CLEAR_TELEMETRY" 0
# shellcheck disable=SC2086  # the parameters are words
run usbtest-insmod "$BUSYBOX" insmod "$USBTEST_KO" $USBTEST_PARAMETERS
i=0
while [ $i -lt 100 ] && ! ls /sys/bus/usb/drivers/usbtest/ 2>/dev/null | grep -q ':1.0'; do
    sleep 0.1; i=$((i + 1))
done
while read -r number iterations length vary sglen; do
    mark "$("$USBTEST_HELPER" "$DEVNODE" test "$number" "$iterations" "$length" "$vary" \
        "$sglen" 2>&1 | tail -n 1)"
done < "$OUT/usbtest-cases.txt"
"$USBTEST_HELPER" "$DEVNODE" vendor-in "$GET_TELEMETRY" "$TELEMETRY_SIZE" \
    > "$OUT/usbtest-telemetry.hex" 2> "$OUT/usbtest-telemetry.err"
dmesg | grep -i 'usbtest' > "$OUT/usbtest-dmesg.txt"
run usbtest-rmmod "$BUSYBOX" rmmod usbtest
run usbtest-pattern "$USBTEST_HELPER" "$DEVNODE" vendor-out "$SET_DATA_MODE" "$PATTERN"

# The host kills the exporter once this sweep has moved 64 KiB transfers (after its 4K point).
mark unplug-started
run unplug "$BUSPROBE" sweep --device "$SELECTOR" --direction in --lengths 4K,64K \
    --queue-depth 1 --min-bytes 256K --no-progress --json "$OUT/unplug.json"
if [ -n "$SS_SELECTOR" ]; then
    . "$(dirname "$0")/ss_checks.sh"
fi
# The null disk at SuperSpeed, plugged in now that the SuperSpeed probe is gone.
if [ -n "$SS_STORAGE" ]; then
    . "$(dirname "$0")/ss_storage_checks.sh"
fi
# Two USB 2.0 devices at once, each named by its port path.
if [ -n "$PAIR_SELECTOR" ]; then
    . "$(dirname "$0")/pair_checks.sh"
fi
# The null disk, plugged in now that the probe (same VID:PID and serial) is gone.
if [ -n "$STORAGE" ]; then
    . "$(dirname "$0")/storage_checks.sh"
fi
# The whole kernel log: every enumeration in it, from plug to device (issue 47, item 3).
dmesg > "$OUT/dmesg-all.txt"
mark checks-done
