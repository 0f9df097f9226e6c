#!/bin/sh
# Builds the OSHMEM peer benchmarks: oshcc -O2 -o OUT/NAME NAME.c
#   bench/peer/build.sh [OUTDIR]      (default: bench/peer/bin)
# OSHCC overrides the compiler wrapper (default: oshcc).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/bin}
cc=${OSHCC:-oshcc}
progs="put get put_pingpong put_bw get_bw put_mr atomics ptr barrier broadcast reduce collect fcollect alltoall team_create"
command -v "$cc" >/dev/null 2>&1 || {
	echo "build.sh: $cc not found (apt-get install -y openmpi-bin libopenmpi-dev)" >&2
	exit 1
}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$here"
for p in $progs; do
	echo "$cc -O2 -o $out/$p $p.c"
	"$cc" -O2 -Wall -Wextra -o "$out/$p" "$p.c"
done
