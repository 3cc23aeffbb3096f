# Sourced by usb_checks.sh behind the controller that gets the null disk (sim/vm/usb_pass.py):
# the guest kernel's usb-storage, sd and block layer drive the simulated disk; busprobe sweeps it
# as block:/dev/sdX, sg_raw sends it an opcode it does not have, and its telemetry page (INQUIRY
# VPD 0xC0) is read back for the host to decode.
mark storage-plug
DISK=
i=0
while [ $i -lt 600 ] && [ -z "$DISK" ]; do  # QEMU reconnects every second; then attach, scan
    for d in /sys/block/sd*; do
        [ "$(cat "$d/device/vendor" 2>/dev/null)" = BUSPROBE ] && DISK=/dev/${d##*/}
    done
    sleep 0.1; i=$((i + 1))
done
SYS=/sys/block/${DISK#/dev/}
INTERFACE=$(readlink -f "$SYS/device/../../..")  # 0:0:0:0 -> target -> host -> 1-1:1.0
mark "storage-disk ${DISK:-none} driver=$(basename "$(readlink "$INTERFACE/driver")")" \
    "max_sectors_kb=$(cat "$SYS/queue/max_sectors_kb" 2>/dev/null)"
run storage-lsblk lsblk --bytes --nodeps --output NAME,SIZE,VENDOR,MODEL,RO "$DISK"
run storage-sweep "$BUSPROBE" sweep --device "block:$DISK" --direction both --lengths 4K,128K \
    --queue-depth 1 --min-bytes 1 --no-progress --json "$OUT/storage-sweep.json"
# An opcode the disk does not have (0x0E, group 0: 6 bytes): CHECK CONDITION, ILLEGAL REQUEST.
run storage-bad-opcode sg_raw -v "$DISK" 0e 00 00 00 00 00
run storage-after "$BUSPROBE" sweep --device "block:$DISK" --direction read --lengths 4K \
    --queue-depth 1 --min-bytes 1 --no-progress --json "$OUT/storage-after.json"
# INQUIRY, EVPD, page 0xC0 (the storage telemetry), 512 bytes at most.
run storage-telemetry sg_raw --request=512 --outfile="$OUT/storage-telemetry.bin" "$DISK" \
    12 01 c0 02 00 00
mark storage-done
