# Sourced by usb_checks.sh behind xHCI (SS_STORAGE set by sim/vm/usb_pass.py), after the
# SuperSpeed probe was unplugged: the null disk at SuperSpeed (sim:usb3?design=storage) is
# plugged in, the guest's usb-storage binds it at 5000M (BOT on alternate 0: the IGNORE_UAS
# quirk, sim/vm/initramfs.py), lsblk shows it and busprobe sweeps it as block:/dev/sdX; then
# the quirk is dropped and the interface probed again, and uas drives alternate 1 with bulk
# streams (QEMU's xHCI allocates them, the export relays them). Its figures are QEMU's emulated
# controller's. The host unplugs it again at ss-storage-done. SS_BOT_POINTS and SS_UAS_POINTS
# (guest.env) give the two sweeps' lengths and queue depths: the USB pass's few by default, the
# bench's ladder (sim/vm/ladder_pass.py) in full.
SS_BOT_POINTS=${SS_BOT_POINTS:---lengths 128K --queue-depth 1}
SS_UAS_POINTS=${SS_UAS_POINTS:---lengths 4K,64K --queue-depth 1,4}
# SS_SCSI_TIMEOUT (seconds, guest.env): the SCSI layer's command timeout for the disk. Its 30 s
# assume a real link; here the simulator moves ~0.2 MB/s, so eight queued 2 MiB reads (16
# commands, each timed from its submission) outlast it, and uas aborts them and resets the
# device: the ladder sets it longer.
scsi_timeout() { if [ -n "$SS_SCSI_TIMEOUT" ]; then echo "$SS_SCSI_TIMEOUT" > "$1/device/timeout"; fi; }
mark ss-storage-plug
SS_DISK=$(busprobe_disk)
SS_SYS=/sys/block/${SS_DISK#/dev/}
SS_IFACE=$(readlink -f "$SS_SYS/device/../../..")  # 0:0:0:0 -> target -> host -> 2-1:1.0
mark "ss-storage-disk ${SS_DISK:-none} driver=$(basename "$(readlink "$SS_IFACE/driver")")" \
    "speed=$(cat "$SS_IFACE/../speed" 2>/dev/null)" \
    "max_sectors_kb=$(cat "$SS_SYS/queue/max_sectors_kb" 2>/dev/null)"
scsi_timeout "$SS_SYS"
run ss-storage-lsblk lsblk --bytes --nodeps --output NAME,SIZE,VENDOR,MODEL,RO "$SS_DISK"
run ss-storage-sweep "$BUSPROBE" sweep --device "block:$SS_DISK" --direction both \
    $SS_BOT_POINTS --min-bytes 1 --no-progress \
    --json "$OUT/ss-storage-sweep.json"
# The same disk through uas at 5000M, in the same boot.
SS_IFN=${SS_IFACE##*/}
echo > /sys/module/usb_storage/parameters/quirks
echo "$SS_IFN" > /sys/bus/usb/drivers/usb-storage/unbind
echo "$SS_IFN" > /sys/bus/usb/drivers_probe
SS_UAS_DISK=$(busprobe_disk)
SS_UAS_SYS=/sys/block/${SS_UAS_DISK#/dev/}
scsi_timeout "$SS_UAS_SYS"
mark "ss-uas-disk ${SS_UAS_DISK:-none}" \
    "driver=$(basename "$(readlink "/sys/bus/usb/devices/$SS_IFN/driver")")" \
    "speed=$(cat "/sys/bus/usb/devices/$SS_IFN/../speed" 2>/dev/null)" \
    "alternate=$(cat "/sys/bus/usb/devices/$SS_IFN/bAlternateSetting" 2>/dev/null | tr -d ' ')"
dmesg | grep -iE 'uas|stream' | tail -n 6 | while read -r line; do mark "ss-uas-dmesg $line"; done
run ss-uas-lsusb lsusb -t
run ss-uas-sweep "$BUSPROBE" sweep --device "block:$SS_UAS_DISK" --direction both \
    $SS_UAS_POINTS --min-bytes 1 --no-progress \
    --json "$OUT/ss-uas-sweep.json"
# An opcode the disk does not have: CHECK CONDITION on the tag's status stream; then it works.
run ss-uas-bad-opcode sg_raw -v "$SS_UAS_DISK" 0e 00 00 00 00 00
run ss-uas-telemetry sg_raw --request=512 --outfile="$OUT/ss-uas-telemetry.bin" \
    "$SS_UAS_DISK" 12 01 c0 02 00 00
# A port reset, as uas's error handling does after a SCSI timeout (usb_reset_device; usbreset
# asks usbfs for the same): the export carries it out in the simulation (a Hot Reset and the
# enumeration), uas takes the device back (alternate 1 and its streams again), and the disk
# reads its pattern.
SS_USBDEV=/sys/bus/usb/devices/${SS_IFN%%:*}
run ss-uas-reset usbreset "$(cat "$SS_USBDEV/busnum")/$(cat "$SS_USBDEV/devnum")"
SS_RESET_DISK=$(busprobe_disk)
mark "ss-uas-reset-disk ${SS_RESET_DISK:-none}" \
    "driver=$(basename "$(readlink "/sys/bus/usb/devices/$SS_IFN/driver")")" \
    "alternate=$(cat "/sys/bus/usb/devices/$SS_IFN/bAlternateSetting" 2>/dev/null | tr -d ' ')"
reads_again ss-uas-after-reset "$SS_RESET_DISK"
# Commands that time out with their data moving: 16 READ(10)s of 512 KiB (uas's largest
# command) at once, each given 7 s (SG_IO's least): the simulator moves 512 KiB in 0.5 to 1.5 s,
# so the later ones time out. uas aborts them and, as an abort cannot reach the device, resets
# it (its error handler, uas_eh_device_reset_handler); the export ends what the guest had
# queued and carries out the reset, and the disk answers the TEST UNIT READY after it and reads
# again. (The disk was offlined here: packets queued before the reset reached the reset device.)
SS_EH_FROM=$(dmesg | wc -l)
SS_EH_PIDS=
for lba in $(seq 16 31); do
    sg_raw --timeout=7 --request=524288 --outfile=/dev/null "$SS_RESET_DISK" \
        28 00 00 00 $lba 00 00 04 00 00 > "$OUT/ss-uas-timeout-$lba.out" 2>&1 &
    SS_EH_PIDS="$SS_EH_PIDS $!"
done
for pid in $SS_EH_PIDS; do wait "$pid"; done
dmesg | tail -n +$((SS_EH_FROM + 1)) | grep -E 'uas_eh|offline|not ready after' | tail -n 8 |
    while read -r line; do mark "ss-uas-eh $line"; done
SS_EH_DISK=$(busprobe_disk)
mark "ss-uas-eh-disk ${SS_EH_DISK:-none}" \
    "state=$(cat "/sys/block/${SS_EH_DISK#/dev/}/device/state" 2>/dev/null)"
reads_again ss-uas-after-timeout "$SS_EH_DISK"
mark ss-storage-done
