# Sourced by usb_checks.sh behind xHCI (SS_STORAGE set by sim/vm/usb_pass.py), after the
# SuperSpeed probe was unplugged: the null disk at SuperSpeed (sim:usb3?design=storage) is
# plugged in, the guest's usb-storage binds it at 5000M (BOT: the SuperSpeed disk has no UAS),
# lsblk shows it and busprobe sweeps it as block:/dev/sdX. Its figures are QEMU's emulated
# controller's. The host unplugs it again at ss-storage-done.
mark ss-storage-plug
SS_DISK=$(busprobe_disk)
SS_SYS=/sys/block/${SS_DISK#/dev/}
SS_IFACE=$(readlink -f "$SS_SYS/device/../../..")  # 0:0:0:0 -> target -> host -> 2-1:1.0
mark "ss-storage-disk ${SS_DISK:-none} driver=$(basename "$(readlink "$SS_IFACE/driver")")" \
    "speed=$(cat "$SS_IFACE/../speed" 2>/dev/null)" \
    "max_sectors_kb=$(cat "$SS_SYS/queue/max_sectors_kb" 2>/dev/null)"
run ss-storage-lsblk lsblk --bytes --nodeps --output NAME,SIZE,VENDOR,MODEL,RO "$SS_DISK"
run ss-storage-sweep "$BUSPROBE" sweep --device "block:$SS_DISK" --direction both \
    --lengths 128K --queue-depth 1 --min-bytes 1 --no-progress \
    --json "$OUT/ss-storage-sweep.json"
mark ss-storage-done
