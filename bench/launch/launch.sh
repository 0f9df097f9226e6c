#!/usr/bin/env bash
# Measures how launch time grows with the number of PEs: the wall time
# of `oshrun -n N hello` (start every PE, one barrier, finalize, exit)
# with 64 KiB heaps, ROUNDS times per N, alternating the sizes; prints
# the median, the spread and the median cost per PE.
# Usage: bench/launch/launch.sh [ROUNDS] [N...]   (default 3; 16 64 256 1000)
# Each job gets a time limit of 600 s (oshrun --timeout); a job that
# fails or times out is reported as such.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(16 64 256 1000)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/oshrun" ./cmd/oshrun
go build -o "$tmp/hello" ./examples/hello
med() { printf "%s\n" "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
declare -A ms
for _ in $(seq "$rounds"); do
	for n in "${sizes[@]}"; do
		s=$(date +%s%N)
		if SHMEM_SYMMETRIC_SIZE=64K "$tmp/oshrun" --timeout 600s -n "$n" "$tmp/hello" >/dev/null 2>"$tmp/err"; then
			e=$(date +%s%N)
			ms[$n]+="$(((e - s) / 1000000)) "
		else
			echo "N=$n failed: $(tail -1 "$tmp/err")"
		fi
	done
done
printf "%6s %10s %10s %22s\n" PEs "median ms" "ms per PE" "all runs (ms)"
for n in "${sizes[@]}"; do
	read -ra v <<<"${ms[$n]:-}"
	[ ${#v[@]} -gt 0 ] || continue
	m=$(med "${v[@]}")
	printf "%6d %10d %10.2f %22s\n" "$n" "$m" "$(awk -v m="$m" -v n="$n" 'BEGIN{print m/n}')" "${v[*]}"
done
