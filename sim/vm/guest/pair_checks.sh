#!/bin/sh
# Two busprobe USB 2.0 devices at once on the xHCI guest (sourced by usb_checks.sh when PAIR is
# set; issue 30): two more exports of sim:usb2, plugged in now that the probe and the SuperSpeed
# device are gone. They carry one serial, as two boards out of one build would, so the sweep
# names each by its port path (usb:VID:PID@PORT). Alone, then together, every byte checked on
# both; the verdict names what they share (the controller). Throughput is QEMU's and the two
# simulators' on this machine's cores, never a figure about hardware.
mark pair-plug
pair_ports() {  # the sysfs names of the high-speed busprobe devices, one a line
    for id in $(grep -l '^1209$' /sys/bus/usb/devices/*/idVendor 2>/dev/null); do
        dev=$(dirname "$id")
        [ "$(cat "$dev/speed" 2>/dev/null)" = 480 ] && basename "$dev"
    done
}
i=0
while [ $i -lt 600 ] && [ "$(pair_ports | grep -c .)" -lt 2 ]; do
    sleep 0.2; i=$((i + 1))
done
dmesg > "$OUT/pair-dmesg.txt"
P1=$(pair_ports | sed -n 1p); P2=$(pair_ports | sed -n 2p)
mark "pair-ports $P1 $P2"
run pair-sweep "$BUSPROBE" sweep --device "$PAIR_SELECTOR@$P1" --device "$PAIR_SELECTOR@$P2" \
    --direction in --lengths 64K --queue-depth 4 --min-bytes 128K --no-progress \
    --json "$OUT/pair-sweep.json"
