# Sourced by the guest check scripts: the guest's environment and the marker-line helpers.
# $OUT is the output folder; guest.env there sets what the scripts need (BUSPROBE, PYTHON, ...).
. "$OUT/guest.env"
# What Python compiles in the guest is kept in the tmpfs overlay for the boot's next process
# (the host compiled busprobe's own sources before the boot: sim/vm/bytecode.py).
export HOME=/tmp MPLCONFIGDIR=/tmp/matplotlib
unset PYTHONDONTWRITEBYTECODE
mark() { echo "BUSPROBE-VM $*"; }
run() {  # run NAME COMMAND...: its exit status and first error line as one marker line
    name=$1; shift
    "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
    status=$?
    mark "$name rc=$status $(grep -m1 'busprobe: error:' "$OUT/$name.err")"
}
reachable() {  # reachable PATH: every folder above PATH may be passed through by any user
    # A checkout in a 0700 folder (mktemp -d, /root) is out of an unprivileged user's reach.
    # The guest's root is an overlay on the host's, so this changes nothing on the host.
    dir=$(dirname "$1")
    while [ "$dir" != / ]; do chmod o+x "$dir"; dir=$(dirname "$dir"); done
}
enumerated() {  # enumerated TRIES REGEX FILE NAME MATCH: wait for a sysfs file of every USB
    # device to read REGEX (0.2 s a try), then mark each dmesg line with MATCH, dmesg in NAME.txt
    i=0
    while [ $i -lt "$1" ] && ! grep -qs "$2" /sys/bus/usb/devices/*/"$3"; do
        sleep 0.2; i=$((i + 1))
    done
    dmesg > "$OUT/$4.txt"
    grep -E "$5" "$OUT/$4.txt" | while read -r line; do mark "$4 $line"; done
}
reads_again() {  # reads_again NAME DISK: busprobe sweeps 4 KiB reads of DISK once more (it
    # still answers after what came before), its result in NAME.json
    run "$1" "$BUSPROBE" sweep --device "block:$2" --direction read --lengths 4K \
        --queue-depth 1 --min-bytes 1 --no-progress --json "$OUT/$1.json"
}
busprobe_disk() {  # print /dev/sdX of the busprobe null disk once the kernel has it, nothing
    # if none came in 60 s (QEMU reconnects a late-plugged export every second, then
    # usb-storage or uas attaches and scans)
    disk=
    i=0
    while [ $i -lt 600 ] && [ -z "$disk" ]; do
        for d in /sys/block/sd*; do
            [ "$(cat "$d/device/vendor" 2>/dev/null)" = BUSPROBE ] && disk=/dev/${d##*/}
        done
        sleep 0.1; i=$((i + 1))
    done
    echo "$disk"
}
