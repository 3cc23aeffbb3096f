# Sourced by the guest check scripts: the guest's environment and the marker-line helpers.
# $OUT is the output folder; guest.env there sets what the scripts need (BUSPROBE, PYTHON, ...).
. "$OUT/guest.env"
export HOME=/tmp MPLCONFIGDIR=/tmp/matplotlib PYTHONDONTWRITEBYTECODE=1
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
