#!/bin/sh
# Runs inside the verbs test guest (init.sh, with goshmem.perf=ROUNDS on
# the kernel command line; guest.sh GUEST_PERF=ROUNDS): goshmem across
# two one-PE "hosts" under hydra, its leaders over verbs on rxe0, against
# perftest on the same device (the limit) and against goshmem over its
# TCP backend, in adjacent runs, ROUNDS rounds. It prints one line per
# figure, "FIG round name value" (us for latencies, MB/s = 1e6 B/s for
# bandwidths), which guest.sh turns into ratios.
R=${1:-3}
B=/opt/bench
say() { echo "[guest $(cut -d' ' -f1 /proc/uptime)s] $*"; }

# gosh TRANSPORT PROG ARGS...: PROG on hosts h0 and h1, one PE each.
gosh() {
	t=$1 p=$2
	shift 2
	HYDRA_LAUNCHER=fork SHMEM_INTERNODE=$t SHMEM_VERBS_DEVICE=rxe0 SHMEM_INTERNODE_IFACE=dummy0 SHMEM_SYMMETRIC_SIZE=64m \
		timeout 600 mpiexec.hydra -n 1 -env SHMEM_HOST h0 "$B/$p" "$@" : -n 1 -env SHMEM_HOST h1 "$B/$p" "$@" 2>&1
}

# pt PROG ARGS...: a perftest server and its client on rxe0 (GID index 0,
# as goshmem's default), the client's output.
pt() {
	p=$1
	shift
	timeout 300 "$p" -d rxe0 -x 0 -F "$@" >/tmp/pt-server.log 2>&1 &
	s=$!
	sleep 1
	timeout 300 "$p" -d rxe0 -x 0 -F "$@" 127.0.0.1 2>&1
	wait $s
}

# fig ROUND NAME: reads "size value" rows (a goshmem program's table)
# and prints a FIG line per size, NAME-SIZE; every line of the output
# is also printed, marked RAW.
fig() { awk -v r="$1" -v n="$2" '{print "RAW", $0} /^[0-9]+[ \t]/ {print "FIG", r, n "-" $1, $2}'; }

# ptfig ROUND NAME COLUMN SCALE: perftest's result rows (#bytes first),
# column COLUMN times SCALE.
ptfig() { awk -v r="$1" -v n="$2" -v c="$3" -v k="$4" '{print "RAW", $0} $1 ~ /^[0-9]+$/ && NF >= c {print "FIG", r, n "-" $1, $c * k}'; }

# step NAME: whether to run the steps named NAME (STEPS, a regular
# expression; all by default).
step() { echo "$1" | grep -Eq "${STEPS:-.}"; }

for r in $(seq 1 "$R"); do
	say "perf round $r of $R"
	if step lat; then
		gosh verbs put_pingpong -m 8:8 -i 3000 -w 300 | fig "$r" pp-verbs
		pt ib_write_lat -s 8 -n 3000 | ptfig "$r" writelat 6 1
		# SENDs, as goshmem's small puts are: what a SEND costs here
		# beyond a WRITE that the peer polls in memory (informative).
		pt ib_send_lat -s 8 -n 3000 | ptfig "$r" sendlat 6 1
		# This package's own posts and reaps in ib_write_lat's loop
		# (TestRCPingPong): what Go and cgo cost per message here.
		for t in /opt/*verbs*.test; do
			SHMEM_VERBS_DEVICE=rxe0 timeout 120 "$t" -test.run '^TestRCPingPong$' -test.v 2>&1 |
				awk -v r="$r" '{print "RAW", $0} /RC ping-pong,/ {for (i = 1; i < NF; i++) if ($(i+1) == "us") print "FIG", r, "rcpp-8", $i}'
			SHMEM_VERBS_DEVICE=rxe0 timeout 120 "$t" -test.run '^TestRCPingPongProcesses$' -test.v 2>&1 |
				awk -v r="$r" '{print "RAW", $0} /RC ping-pong across/ {for (i = 1; i < NF; i++) if ($(i+1) == "us") print "FIG", r, "rcpp2-8", $i}'
		done
		gosh tcp put_pingpong -m 8:8 -i 3000 -w 300 | fig "$r" pp-tcp
	fi
	if step pp; then
		gosh verbs put_pingpong -m 4096:1048576 -i 300 -w 30 | fig "$r" pp-verbs
		gosh tcp put_pingpong -m 4096:1048576 -i 300 -w 30 | fig "$r" pp-tcp
	fi
	if step bw; then
		gosh verbs put_bw -m 4096:4194304 -i 300 -w 10 | fig "$r" bw-verbs
		# perftest's MB is 2^20 bytes.
		for s in 1048576 4194304; do
			pt ib_write_bw -s $s -n 100 | ptfig "$r" writebw 4 1.048576
		done
		gosh tcp put_bw -m 4096:4194304 -i 300 -w 10 | fig "$r" bw-tcp
	fi
	# prof: a CPU profile of each PE of the 8-byte ping-pong over verbs
	# (bench's GOSHMEM_BENCH_CPUPROFILE), printed in base64 between
	# PROF-BEGIN and PROF-END lines: guest.sh writes them out as
	# prof-ROUND.peN next to the log, for go tool pprof with
	# $GUEST_WORK/root/opt/bench/put_pingpong.
	if step prof; then
		rm -f /tmp/prof.pe*
		GOSHMEM_BENCH_CPUPROFILE=/tmp/prof gosh verbs put_pingpong -m 8:8 -i 3000 -w 300 | fig "$r" pp-verbs-prof
		for f in /tmp/prof.pe*; do
			[ -s "$f" ] || continue
			echo "PROF-BEGIN $r.${f##*.}"
			base64 "$f"
			echo "PROF-END"
		done
	fi
	if step amo; then
		gosh verbs atomics -m 8:8 -i 3000 -w 300 | awk -v r="$r" '{print "RAW", $0} $1 == "fetch_add" {print "FIG", r, "fadd-verbs-8", $2}'
		pt ib_atomic_lat -n 3000 | ptfig "$r" atomiclat 6 1
	fi
done
say "perf done"
