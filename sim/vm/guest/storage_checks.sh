# Sourced by usb_checks.sh behind the controller that gets the null disk (sim/vm/usb_pass.py):
# the guest kernel's usb-storage, sd and block layer drive the simulated disk; busprobe sweeps it
# as block:/dev/sdX, sg_raw sends it an opcode it does not have, and its telemetry page (INQUIRY
# VPD 0xC0) is read back for the host to decode. Then the same disk is rebound to uas (alternate
# 1) and swept again.
mark storage-plug
DISK=$(busprobe_disk)
SYS=/sys/block/${DISK#/dev/}
INTERFACE=$(readlink -f "$SYS/device/../../..")  # 0:0:0:0 -> target -> host -> 1-1:1.0
mark "storage-disk ${DISK:-none} driver=$(basename "$(readlink "$INTERFACE/driver")")" \
    "max_sectors_kb=$(cat "$SYS/queue/max_sectors_kb" 2>/dev/null)"
run storage-lsblk lsblk --bytes --nodeps --output NAME,SIZE,VENDOR,MODEL,RO "$DISK"
run storage-sweep "$BUSPROBE" sweep --device "block:$DISK" --direction both --lengths 4K,128K \
    --queue-depth 1 --min-bytes 1 --no-progress --json "$OUT/storage-sweep.json"
# An opcode the disk does not have (0x0E, group 0: 6 bytes): CHECK CONDITION, ILLEGAL REQUEST.
run storage-bad-opcode sg_raw -v "$DISK" 0e 00 00 00 00 00
reads_again storage-after "$DISK"
# INQUIRY, EVPD, page 0xC0 (the storage telemetry), 512 bytes at most.
run storage-telemetry sg_raw --request=512 --outfile="$OUT/storage-telemetry.bin" "$DISK" \
    12 01 c0 02 00 00
# The second half, the same disk through uas on alternate 1 (no second boot): drop usb-storage's
# IGNORE_UAS quirk, unbind usb-storage and let the kernel probe the interface again: usb-storage
# now leaves it to uas, which switches to alternate 1 (SET_INTERFACE; the export announces that
# setting's four pipes) and drives it with UAS IUs.
IFACE=${INTERFACE##*/}
echo > /sys/module/usb_storage/parameters/quirks
echo "$IFACE" > /sys/bus/usb/drivers/usb-storage/unbind
echo "$IFACE" > /sys/bus/usb/drivers_probe
UAS_DISK=$(busprobe_disk)
UAS_SYS=/sys/block/${UAS_DISK#/dev/}
mark "storage-uas-disk ${UAS_DISK:-none}" \
    "driver=$(basename "$(readlink "/sys/bus/usb/devices/$IFACE/driver")")" \
    "alternate=$(cat "/sys/bus/usb/devices/$IFACE/bAlternateSetting" 2>/dev/null | tr -d ' ')" \
    "max_sectors_kb=$(cat "$UAS_SYS/queue/max_sectors_kb" 2>/dev/null)"
dmesg | grep -iE 'uas|usb-storage' | tail -n 8 | while read -r line; do mark "storage-uas-dmesg $line"; done
run storage-uas-lsblk lsblk --bytes --nodeps --output NAME,SIZE,VENDOR,MODEL,RO "$UAS_DISK"
run storage-uas-sweep "$BUSPROBE" sweep --device "block:$UAS_DISK" --direction both \
    --lengths 128K --queue-depth 1,4 --min-bytes 1 --no-progress \
    --json "$OUT/storage-uas-sweep.json"
# The telemetry again: how many tags uas kept outstanding in the device's task set.
run storage-uas-telemetry sg_raw --request=512 --outfile="$OUT/storage-uas-telemetry.bin" \
    "$UAS_DISK" 12 01 c0 02 00 00
mark storage-done
