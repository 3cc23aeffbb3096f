#!/bin/sh
# The PCIe pass inside the guest (q35, an endpoint behind a pcie-root-port, intel-iommu): busprobe
# topology from the kernel's real config space, the MPS/MRRS guard's three exits with config
# space read back after each, and VFIO up to the point where busprobe finds the endpoint is not
# its own. $1: output folder; guest.env there sets BUSPROBE, PYTHON, BDF and SMALL_BAR_BDF.
OUT=$1
. "$(dirname "$0")/common.sh"
HELPER="$(dirname "$0")/pcie_checks.py"
config() {  # config NAME: MPS/MRRS of every hop, read from config space by busprobe topology
    run "$1" "$BUSPROBE" topology --device "pcie:$BDF" --json
    "$PYTHON" "$HELPER" hops "$OUT/$1.out" "$1"
}

mark "functions $(ls /sys/bus/pci/devices | tr '\n' ' ')"
config topology
"$BUSPROBE" topology --device "pcie:$BDF" > "$OUT/topology.txt" 2>&1
mark "topology-table $(tail -n +2 "$OUT/topology.txt" | tr -s ' ' | tr '\n' '|')"

# The guard on real config space: a write the function does not take, then its three exits.
"$PYTHON" "$HELPER" written "$BDF" 2> "$OUT/guard-written.err"
config after-written
"$PYTHON" "$HELPER" capped "$BDF" 2> "$OUT/guard-normal.err"
config after-normal
for signal in INT TERM; do
    "$PYTHON" "$HELPER" capped "$BDF" hold > "$OUT/guard-$signal.out" 2>&1 &
    pid=$!
    i=0
    while [ $i -lt 300 ] && ! grep -qs guard-port "$OUT/guard-$signal.out"; do
        sleep 0.1; i=$((i + 1))
    done
    kill -$signal $pid
    wait $pid
    mark "guard-$signal rc=$?"
    cat "$OUT/guard-$signal.out"
    config after-$signal
done

mark "driver-before $(basename "$(readlink /sys/bus/pci/devices/$BDF/driver)" 2>/dev/null)"
echo vfio-pci > "/sys/bus/pci/devices/$BDF/driver_override"
echo "$BDF" > /sys/bus/pci/drivers_probe
mark "driver $(basename "$(readlink /sys/bus/pci/devices/$BDF/driver)")"
mark "iommu-group $(basename "$(readlink /sys/bus/pci/devices/$BDF/iommu_group)")"
"$PYTHON" "$HELPER" vfio "$BDF" > "$OUT/vfio.out" 2>&1
mark "vfio rc=$?"
cat "$OUT/vfio.out"
run sweep "$BUSPROBE" sweep --device "pcie:$BDF" --direction write --lengths 4K \
    --queue-depth 1 --no-progress --json "$OUT/sweep.json"
# Another function, whose BAR0 is smaller than busprobe's (QEMU's vmxnet3: 4 KiB).
echo vfio-pci > "/sys/bus/pci/devices/$SMALL_BAR_BDF/driver_override"
echo "$SMALL_BAR_BDF" > /sys/bus/pci/drivers_probe
run small-bar "$BUSPROBE" sweep --device "pcie:$SMALL_BAR_BDF" --direction write --lengths 4K \
    --queue-depth 1 --no-progress
mark checks-done
