#!/bin/sh
# /init of the verbs test guest (see guest.sh): brings up a soft-RoCE
# device on a dummy netdev, runs the test binaries in /opt (and a
# cross-host job over verbs under hydra), prints
# "GUEST-RESULT: PASS" or "GUEST-RESULT: FAIL" and powers off.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
say() { echo "[guest $(cut -d' ' -f1 /proc/uptime)s] $*"; }
fail=0
bad() { say "FAILED: $*"; fail=1; }
ip link set lo up
# rdma_rxe asks for crc32 through the crypto API: load it first.
modprobe crc32_generic || bad "modprobe crc32_generic"
modprobe rdma_rxe || bad "modprobe rdma_rxe"
modprobe ib_uverbs || bad "modprobe ib_uverbs"
modprobe dummy numdummies=0 || bad "modprobe dummy"
ip link add dummy0 type dummy || bad "ip link add dummy0"
ip link set dummy0 up
sleep 1 # the GID table is built from the link-local address
rdma link add rxe0 type rxe netdev dummy0 || bad "rdma link add rxe0"
ulimit -l unlimited 2>/dev/null || true
hostname guest
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm
# An IPv4 address for the TCP backend's leaders (after rxe0 took its
# GIDs: index 0 stays the link-local one).
ip addr add 192.0.2.1/24 dev dummy0 || bad "ip addr add"
# goshmem.perf=ROUNDS: the performance runs (perf.sh) instead of the tests.
perf=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^goshmem\.perf=//p')
# goshmem.env=A=1,B=2 (GUEST_ENV): extra environment for the runs.
for kv in $(tr ' ' '\n' </proc/cmdline | sed -n 's/^goshmem\.env=//p' | tr ',' ' '); do export "$kv"; done
if [ -n "$perf" ]; then
	# (A clock read is a system call, and an emulated device access,
	# unless the clock source is the TSC.)
	say "clock source: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource), available: $(cat /sys/devices/system/clocksource/clocksource0/available_clocksource)"
	STEPS=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^goshmem\.steps=//p') sh /opt/perf.sh "$perf" || bad "perf.sh"
	rdma link delete rxe0 || bad "rdma link delete rxe0"
	if [ $fail = 0 ]; then say "GUEST-RESULT: PASS"; else say "GUEST-RESULT: FAIL"; fi
	sync
	poweroff -f
fi
# goshmem.run=REGEXP on the kernel command line (GUEST_RUN in guest.sh)
# runs only the matching tests.
run=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^goshmem\.run=//p')
for t in /opt/*.test; do
	say "== $t"
	if (cd /tmp && SHMEM_VERBS_DEVICE=rxe0 timeout 120 "$t" -test.v -test.count=1 ${run:+-test.run "$run"}); then
		say "$t OK"
	else
		bad "$t"
	fi
done
# Jobs of 2 and 3 "hosts" (SHMEM_HOST groups) under MPICH's hydra, their
# leaders talking over verbs on rxe0: the cross-host scenarios of
# node's TestAcrossHosts that fit TCG's speed (README, "RDMA verbs").
# xtest WHAT REGEXP SECONDS runs those of node's tests that match REGEXP.
xtest() {
	say "== /opt/node.xtest over verbs: $1"
	if (cd /tmp && HYDRA_LAUNCHER=fork SHMEM_INTERNODE=verbs SHMEM_VERBS_DEVICE=rxe0 SHMEM_INFO=0 \
		timeout "$3" /opt/node.xtest -test.v -test.count=1 -test.run "$2"); then
		say "/opt/node.xtest over verbs, $1: OK"
	else
		bad "/opt/node.xtest over verbs, $1"
	fi
}
if [ -x /opt/node.xtest ] && { [ -z "$run" ] || echo TestAcrossHosts | grep -Eq "$run"; }; then
	xtest "scenarios" '^TestAcrossHosts$/^(rma-1-1|rma-2-2|xhost-held-2-2|xhost-fence-1-1|xhost-fence-2-2|xhost-teams-2-2|xhost-reduce-2-1-2|xhost-ctx-1-1-1|xhost-api-2-2|rma-random-2-1|coll-random-2-1)$' 600
	# A PE killed on one host (a leader, PE 2, or not, PE 3) ends the
	# job over verbs as over tcp.
	xtest "a killed PE" '^TestAcrossHostsKilledPE$' 300
	# The same job with SHMEM_INFO=1 must say that its leaders use verbs.
	(cd /tmp && HYDRA_LAUNCHER=fork SHMEM_INTERNODE=verbs SHMEM_VERBS_DEVICE=rxe0 SHMEM_INFO=1 SHMEM_SYMMETRIC_SIZE=8m \
		timeout 120 mpiexec.hydra -n 1 -env SHMEM_HOST h0 -env GOSHMEM_TEST_SCENARIO rma /opt/node.xtest -test.run='^$' \
		: -n 1 -env SHMEM_HOST h1 -env GOSHMEM_TEST_SCENARIO rma /opt/node.xtest -test.run='^$') >/tmp/info.log 2>&1
	grep -m1 'between hosts: the leaders over verbs on rxe0' /tmp/info.log || { cat /tmp/info.log; bad "SHMEM_INFO does not name verbs on rxe0"; }
	# Its puts of 8 KiB and more are RDMA WRITEs, its gets RDMA READs
	# (the transport's counters, printed at the end with SHMEM_INFO).
	grep -E 'RDMA writes [1-9][0-9]*, reads [1-9]' /tmp/info.log || { cat /tmp/info.log; bad "no RDMA WRITE or READ in the rma job"; }
	# In the fence job a Fence orders a small put or an AMO before each
	# large put: the 32 KiB ones must go as frames after them, the
	# 512 KiB ones (every fourth round of 200) as RDMA WRITEs after a
	# Quiet round trip: at least 50 writes (one per 64 KiB when the source
	# is not in an exposed heap), none for the 150 smaller puts.
	(cd /tmp && HYDRA_LAUNCHER=fork SHMEM_INTERNODE=verbs SHMEM_VERBS_DEVICE=rxe0 SHMEM_INFO=1 SHMEM_SYMMETRIC_SIZE=8m \
		timeout 120 mpiexec.hydra -n 1 -env SHMEM_HOST h0 -env GOSHMEM_TEST_SCENARIO xhost-fence /opt/node.xtest -test.run='^$' \
		: -n 1 -env SHMEM_HOST h1 -env GOSHMEM_TEST_SCENARIO xhost-fence /opt/node.xtest -test.run='^$') >/tmp/info3.log 2>&1 || { cat /tmp/info3.log; bad "the fence job"; }
	grep -E 'verbs leader 0: .*RDMA writes ([5-9][0-9]|[1-9][0-9]{2,}),' /tmp/info3.log || { cat /tmp/info3.log; bad "the fence job's leader 0 posted fewer than 50 RDMA WRITEs"; }
	# With 2 PEs per host every put across hosts comes from a PE outside
	# its leader's process (the ring's neighbour of each leader is on
	# its host): its heap-to-heap puts must be RDMA WRITEs that both
	# leaders post from those PEs' heaps (xPutFrom).
	(cd /tmp && HYDRA_LAUNCHER=fork SHMEM_INTERNODE=verbs SHMEM_VERBS_DEVICE=rxe0 SHMEM_INFO=1 SHMEM_SYMMETRIC_SIZE=8m \
		timeout 120 mpiexec.hydra -n 2 -env SHMEM_HOST h0 -env GOSHMEM_TEST_SCENARIO rma /opt/node.xtest -test.run='^$' \
		: -n 2 -env SHMEM_HOST h1 -env GOSHMEM_TEST_SCENARIO rma /opt/node.xtest -test.run='^$') >/tmp/info2.log 2>&1 || { cat /tmp/info2.log; bad "rma on 2 hosts x 2 PEs"; }
	grep 'verbs leader' /tmp/info2.log
	[ "$(grep -cE 'verbs leader [01]: .*RDMA writes [1-9]' /tmp/info2.log)" = 2 ] || { cat /tmp/info2.log; bad "the leaders posted no RDMA WRITE for their host-mates"; }
	# and its get into the heap an RDMA READ that its leader posts
	# (xGetInto): leader 0's only reads are for PE 1 (its own PE's
	# neighbour is on its host).
	grep -qE 'verbs leader 0: .*reads [1-9]' /tmp/info2.log || { cat /tmp/info2.log; bad "leader 0 posted no RDMA READ for its host-mate"; }
fi
rdma link delete rxe0 || bad "rdma link delete rxe0"
if [ $fail = 0 ]; then say "GUEST-RESULT: PASS"; else say "GUEST-RESULT: FAIL"; fi
sync
poweroff -f
exit 1
