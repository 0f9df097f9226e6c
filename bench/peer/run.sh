#!/bin/sh
# Runs one OSHMEM peer benchmark under Open MPI's oshrun:
#   bench/peer/run.sh NAME [ARGS...]     e.g. run.sh put -m 1:4096 -i 1000
# NP      number of PEs (default 2)
# BIN     directory holding the built programs (default bench/peer/bin)
# OSHRUN  launcher (default /usr/bin/oshrun, Open MPI's, not goshmem's)
# SHMEM_SYMMETRIC_HEAP_SIZE  per-PE symmetric heap (default 256M)
# BIND    --bind-to policy (default core; core:overload-allowed and
#         --oversubscribe are used automatically when NP exceeds the CPUs)
# PEER_RUN_FLAGS  extra oshrun flags
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 1 ]; then
	echo "usage: $0 NAME [ARGS...]  (NAME: put get put_pingpong put_bw get_bw put_mr atomics ptr barrier broadcast reduce collect fcollect alltoall team_create)" >&2
	exit 2
fi
name=$1
shift
bin=${BIN:-$here/bin}
prog=$bin/$name
if [ ! -x "$prog" ]; then
	echo "run.sh: $prog not built (run $here/build.sh)" >&2
	exit 1
fi
np=${NP:-2}
bind=${BIND:-core}
extra=
ncpu=$(nproc 2>/dev/null || echo 1)
if [ "$np" -gt "$ncpu" ]; then
	# More PEs than CPUs: oshrun refuses both the slots and the binding
	# unless told; spinning PEs then share cores, so times are not comparable.
	echo "run.sh: NP=$np exceeds the $ncpu CPUs: oversubscribing" >&2
	extra=--oversubscribe
	[ -z "${BIND:-}" ] && bind=core:overload-allowed
fi
heap=${SHMEM_SYMMETRIC_HEAP_SIZE:-256M}
# --allow-run-as-root: these machines run as root.
# SHMEM_SYMMETRIC_HEAP_SIZE: what OSHMEM 4.1 reads (not SHMEM_SYMMETRIC_SIZE).
# OMPI_MCA_osc=^rdma: the osc rdma component segfaults in shmem_finalize here.
# shellcheck disable=SC2086
exec "${OSHRUN:-/usr/bin/oshrun}" -np "$np" --bind-to "$bind" --allow-run-as-root \
	$extra ${PEER_RUN_FLAGS:-} \
	-x SHMEM_SYMMETRIC_HEAP_SIZE="$heap" -x OMPI_MCA_osc=^rdma \
	"$prog" "$@"
