#!/usr/bin/env bash
# Measures what placement costs and changes on this machine, each pair
# alternated in one run, medians printed:
#   * launching and finishing a 2-PE job bound to cores: goshmem's oshrun
#     against Open MPI's (the peer's barrier program, built by
#     bench/peer/build.sh), when Open MPI is installed;
#   * 8 B put ping-pong and barrier latency, bound to cores vs unbound.
# Usage: bench/placement.sh [ROUNDS]   (default 7; launch uses 11)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/oshrun" ./cmd/oshrun
for p in barrier put_pingpong; do go build -o "$tmp/$p" "./bench/$p"; done
G="$tmp/oshrun"
med() { printf "%s\n" "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
us() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(((e - s) / 1000)); }

if command -v oshcc >/dev/null && command -v /usr/bin/oshrun >/dev/null; then
	bench/peer/build.sh "$tmp/peer" >/dev/null
	P=(/usr/bin/oshrun -np 2 --bind-to core --allow-run-as-root -x OMPI_MCA_osc=^rdma -x SHMEM_SYMMETRIC_HEAP_SIZE=256M)
	gl=() pl=()
	for _ in $(seq 11); do
		gl+=("$(us "$G" -n 2 --bind-to core "$tmp/barrier" -i 1 -w 1)")
		pl+=("$(us "${P[@]}" "$tmp/peer/barrier" -i 1 -w 1)")
	done
	g=$(med "${gl[@]}") p=$(med "${pl[@]}")
	echo "launch+finish 2 PEs bound to cores: goshmem $g us, peer $p us, ratio $(awk -v g="$g" -v p="$p" 'BEGIN{printf "%.3f", g/p}')"
else
	echo "Open MPI (oshcc, /usr/bin/oshrun) not installed: launch time not compared"
fi

bp=() up=() bb=() ub=()
for _ in $(seq "$rounds"); do
	bp+=("$("$G" -n 2 --bind-to core "$tmp/put_pingpong" -m 8:8 -i 20000 | awk '/^8 /{print $2}')")
	up+=("$("$G" -n 2 --bind-to none "$tmp/put_pingpong" -m 8:8 -i 20000 | awk '/^8 /{print $2}')")
	bb+=("$("$G" -n 2 --bind-to core "$tmp/barrier" -i 20000 | awk '/^2 /{print $2}')")
	ub+=("$("$G" -n 2 --bind-to none "$tmp/barrier" -i 20000 | awk '/^2 /{print $2}')")
done
for pair in "put ping-pong 8 B one-way:bp:up" "barrier, 2 PEs:bb:ub"; do
	IFS=: read -r name b u <<<"$pair"
	declare -n B=$b U=$u
	mb=$(med "${B[@]}") mu=$(med "${U[@]}")
	echo "$name (us): bound $mb, unbound $mu, ratio $(awk -v b="$mb" -v u="$mu" 'BEGIN{printf "%.2f", b/u}')   [bound: ${B[*]} | unbound: ${U[*]}]"
done
