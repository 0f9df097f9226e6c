#!/bin/sh
# /init of the verbs test guest (see guest.sh): brings up a soft-RoCE
# device on a dummy netdev, runs the test binaries in /opt, prints
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
rdma link delete rxe0 || bad "rdma link delete rxe0"
if [ $fail = 0 ]; then say "GUEST-RESULT: PASS"; else say "GUEST-RESULT: FAIL"; fi
sync
poweroff -f
exit 1
