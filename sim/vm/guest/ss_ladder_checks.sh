#!/bin/sh
# The SuperSpeed null disk alone behind qemu-xhci (sim/vm/ladder_pass.py, make bench): the
# USB pass's SuperSpeed storage checks with the founding documents' ladder, 4 KiB and 2 MiB x
# queue depth 1, 4 and 8 both ways, through usb-storage (BOT, the IGNORE_UAS quirk) and then
# uas with bulk streams, in one boot. $1: the run's output folder (guest.env sets the points).
OUT=$1
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/ss_storage_checks.sh"
dmesg > "$OUT/dmesg-all.txt"
mark checks-done
