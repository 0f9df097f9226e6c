#!/usr/bin/env bash
# Runs goshmem's verbs tests on real verbs traffic: soft-RoCE (rdma_rxe)
# in a throw-away qemu guest booted from Debian's own kernel package,
# with an initramfs of busybox and Debian's rdma-core userland. This
# machine's kernel has no rdma_rxe, and its /dev/kvm (when there is one)
# may be a nested hypervisor that cannot boot a stock kernel, so the
# guest runs under TCG unless GUEST_ACCEL=kvm.
#
#   internode/verbs/testdata/guest.sh            # from the repository root
#   GUEST_WORK=/tmp/gv GUEST_TIMEOUT=300 internode/verbs/testdata/guest.sh
#   GUEST_RUN='TestTransport' internode/verbs/testdata/guest.sh   # only these tests
#   GUEST_PERF=3 GUEST_TIMEOUT=1800 internode/verbs/testdata/guest.sh  # performance (perf.sh), 3 rounds
#   GUEST_PERF=1 GUEST_STEPS='lat|amo' ...                            # only some of perf.sh's steps
#   GUEST_ENV=SHMEM_INTERNODE_POLL=off,SPIN=10 ...                     # extra environment in the guest
#   GUEST_APPEND='clocksource=tsc tsc=reliable' ...                    # extra kernel command line
#
# It installs what it needs on the host with apt (qemu-system-x86, kmod,
# cpio, libibverbs-dev, gcc), downloads the guest's .debs, builds the
# test binaries with `go test -c -tags verbs` (./internode/verbs, and
# ./node for a job of 2 hosts x 2 PEs over verbs under MPICH's hydra,
# which it copies from this host), boots the guest, and prints one line, "guest.sh: PASS" or "guest.sh: FAIL (...)";
# the exit status says the same. It writes only under GUEST_WORK and
# leaves nothing running (the qemu it started is killed on exit).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
W=${GUEST_WORK:-/tmp/goshmem-verbs-guest}
TIMEOUT=${GUEST_TIMEOUT:-300}
ACCEL=${GUEST_ACCEL:-tcg}
TRIPLET=x86_64-linux-gnu
mkdir -p "$W"
LOG=$W/guest.log
PIDFILE=$W/qemu.pid

fail() { echo "guest.sh: FAIL ($*)"; exit 1; }
cleanup() {
	if [ -s "$PIDFILE" ]; then
		p=$(cat "$PIDFILE")
		if kill -0 "$p" 2>/dev/null && grep -q qemu-system "/proc/$p/cmdline" 2>/dev/null; then
			kill "$p" 2>/dev/null || true
			sleep 1
			kill -9 "$p" 2>/dev/null || true
		fi
		rm -f "$PIDFILE"
	fi
}
trap cleanup EXIT

# ---- host packages -------------------------------------------------------
need=()
for c in qemu-system-x86_64:qemu-system-x86 depmod:kmod modinfo:kmod cpio:cpio gcc:gcc mpiexec.hydra:mpich; do
	command -v "${c%%:*}" >/dev/null || need+=("${c#*:}")
done
[ -e /usr/include/infiniband/verbs.h ] || need+=(libibverbs-dev)
if [ ${#need[@]} -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >"$W/apt.log" 2>&1 || fail "apt-get update: see $W/apt.log"
	apt-get install -y -qq --no-install-recommends "${need[@]}" >>"$W/apt.log" 2>&1 ||
		fail "apt-get install ${need[*]}: see $W/apt.log"
fi

# ---- guest packages ------------------------------------------------------
KPKG=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
[ -n "$KPKG" ] || fail "no linux-image package found (apt-get update?)"
LIBS="libc6 libibverbs1 ibverbs-providers libnl-3-200 libnl-route-3-200 libmnl0 libbsd0 libmd0 libcap2 librdmacm1 libibumad3 libpci3 libudev1 zlib1g"
DEBS="$KPKG busybox-static iproute2 perftest $LIBS"
mkdir -p "$W/debs"
chown _apt "$W/debs" 2>/dev/null || true
for p in $DEBS; do
	ls "$W/debs/${p}"_*.deb >/dev/null 2>&1 || (cd "$W/debs" && apt-get download -qq "$p" >>"$W/apt.log" 2>&1) ||
		fail "apt-get download $p: see $W/apt.log"
done

# ---- initramfs ---------------------------------------------------------------
K=$W/kernel ROOT=$W/root STAGE=$W/stage
rm -rf "$K" "$ROOT" "$STAGE"
mkdir -p "$K" "$ROOT" "$STAGE"
dpkg-deb -x "$W/debs/${KPKG}"_*.deb "$K"
KVER=$(ls "$K/lib/modules")
MSRC=$K/lib/modules/$KVER
# Debian's kernel package ships no modules.dep: take the closure of what
# the guest loads with modinfo, and let depmod index it.
declare -A PATHOF=() WANT=()
while IFS= read -r f; do n=$(basename "$f" .ko); n=${n%.ko.xz}; PATHOF[${n//-/_}]=$f; done < <(find "$MSRC/kernel" -name '*.ko*')
add() {
	local n=${1//-/_} d
	[ -n "${WANT[$n]:-}" ] && return 0
	[ -n "${PATHOF[$n]:-}" ] || return 0 # built in
	WANT[$n]=1
	for d in $(modinfo -F depends "${PATHOF[$n]}" | tr ',' ' '); do add "$d"; done
}
for m in rdma_rxe ib_uverbs crc32_generic dummy; do add "$m"; done
for n in "${!WANT[@]}"; do install -D -m 0644 "${PATHOF[$n]}" "$ROOT/lib/modules/$KVER/${PATHOF[$n]#$MSRC/}"; done
cp "$MSRC"/modules.order "$MSRC"/modules.builtin "$MSRC"/modules.builtin.modinfo "$ROOT/lib/modules/$KVER/"
depmod -b "$ROOT" "$KVER"
for p in $LIBS; do
	dpkg-deb -x "$W/debs/${p}"_*.deb "$ROOT"
done
dpkg-deb -x "$W/debs"/perftest_*.deb "$STAGE/perftest"
for b in ib_write_lat ib_send_lat ib_write_bw ib_atomic_lat; do install -D -m 0755 "$STAGE/perftest/usr/bin/$b" "$ROOT/usr/bin/$b"; done
dpkg-deb -x "$W/debs"/iproute2_*.deb "$STAGE/iproute2"
install -D -m 0755 "$STAGE/iproute2/usr/bin/rdma" "$ROOT/usr/bin/rdma"
dpkg-deb -x "$W/debs"/busybox-static_*.deb "$STAGE/bb"
install -D -m 0755 "$STAGE/bb/bin/busybox" "$ROOT/bin/busybox"
for a in $("$ROOT/bin/busybox" --list-full); do
	[ -e "$ROOT/$a" ] || [ -L "$ROOT/$a" ] || { mkdir -p "$ROOT/$(dirname "$a")"; ln -s /bin/busybox "$ROOT/$a"; }
done
rm -rf "$ROOT/usr/share" "$ROOT/usr/lib/$TRIPLET/gconv" "$ROOT/usr/libexec"
mkdir -p "$ROOT"/{proc,sys,dev,tmp,run,root,etc,opt}
# MPICH's hydra (mpiexec.hydra and its proxy) from this host, with the
# libraries they load that the guest lacks: the launcher of the
# cross-host job in the guest.
for b in mpiexec.hydra hydra_pmi_proxy; do
	p=$(command -v "$b")
	install -D -m 0755 "$p" "$ROOT/usr/bin/$b"
	for l in $(ldd "$p" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'); do
		[ -e "$ROOT$l" ] || [ -e "$ROOT/usr$l" ] || install -D -m 0644 "$l" "$ROOT/usr$l"
	done
done
printf '127.0.0.1 localhost guest\n' >"$ROOT/etc/hosts"
echo 'include /etc/ld.so.conf.d/*.conf' >"$ROOT/etc/ld.so.conf"
ldconfig -r "$ROOT"
install -m 0755 "$REPO/internode/verbs/testdata/init.sh" "$ROOT/init"

# ---- the test binary -----------------------------------------------------------
(cd "$REPO" && CGO_ENABLED=1 go test -c -tags verbs -o "$ROOT/opt/verbs.test" ./internode/verbs) ||
	fail "go test -c -tags verbs ./internode/verbs"
# The runtime's tests, for the cross-host job over verbs (init.sh runs
# only those, under hydra).
(cd "$REPO" && CGO_ENABLED=1 go test -c -tags verbs -o "$ROOT/opt/node.xtest" ./node) ||
	fail "go test -c -tags verbs ./node"
# On the host, without a device, the tests must skip, not fail.
"$ROOT/opt/verbs.test" -test.run 'TestRCLoopback' -test.v >"$W/host-test.log" 2>&1 ||
	fail "the verbs tests failed on the host (no device: they must skip): see $W/host-test.log"
grep -q -- '--- SKIP: TestRCLoopback' "$W/host-test.log" || grep -q -- '--- PASS: TestRCLoopback' "$W/host-test.log" ||
	fail "TestRCLoopback neither ran nor skipped on the host: see $W/host-test.log"
if [ -n "${GUEST_PERF:-}" ]; then
	(cd "$REPO" && CGO_ENABLED=1 go build -tags verbs -o "$ROOT/opt/bench/" ./bench/put_pingpong ./bench/put_bw ./bench/atomics) ||
		fail "go build -tags verbs ./bench/..."
	install -m 0755 "$REPO/internode/verbs/testdata/perf.sh" "$ROOT/opt/perf.sh"
fi
(cd "$ROOT" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$W/initrd.img"

# ---- boot ----------------------------------------------------------------------
case "$ACCEL" in
kvm) QA=(-enable-kvm -cpu host) ;;
*) QA=(-accel tcg,thread=multi -cpu max) ;;
esac
rm -f "$PIDFILE"
set +e
timeout -k 10 "$TIMEOUT" qemu-system-x86_64 -name goshmem-verbs -pidfile "$PIDFILE" "${QA[@]}" -m 2G -smp 2 \
	-kernel "$K/boot/vmlinuz-$KVER" -initrd "$W/initrd.img" \
	-append "console=ttyS0 panic=-1 loglevel=4${GUEST_RUN:+ goshmem.run=$GUEST_RUN}${GUEST_PERF:+ goshmem.perf=$GUEST_PERF}${GUEST_STEPS:+ goshmem.steps=$GUEST_STEPS}${GUEST_ENV:+ goshmem.env=$GUEST_ENV}${GUEST_APPEND:+ $GUEST_APPEND}" -nic none -nographic -no-reboot </dev/null >"$LOG" 2>&1
rc=$?
set -e
if [ -n "${GUEST_PERF:-}" ] && grep -q 'GUEST-RESULT: PASS' "$LOG"; then
	tr -d '\r' <"$LOG" | grep '^FIG ' >"$W/perf.txt"
	# CPU profiles (perf.sh's prof step), base64 between markers.
	tr -d '\r' <"$LOG" | awk -v w="$W" '/^PROF-BEGIN /{f=w "/prof-" $2 ".b64"; next} /^PROF-END/{close(f); f=""; next} f{print > f}'
	for b in "$W"/prof-*.b64; do
		[ -e "$b" ] || continue
		base64 -d "$b" >"${b%.b64}" && rm -f "$b" && echo "guest.sh: CPU profile ${b%.b64} (go tool pprof $ROOT/opt/bench/put_pingpong ${b%.b64})"
	done
	awk -f "$REPO/internode/verbs/testdata/ratios.awk" "$W/perf.txt"
	echo "guest.sh: PASS (performance, $GUEST_PERF rounds; figures in $W/perf.txt)"
	exit 0
fi
if grep -q 'GUEST-RESULT: PASS' "$LOG"; then
	grep -E '^ *(--- |\[guest)' "$LOG" | sed 's/^/  /' || true
	echo "guest.sh: PASS (soft-RoCE in a qemu guest, $ACCEL; log $LOG)"
	exit 0
fi
tail -40 "$LOG" | sed 's/^/  /'
fail "qemu status $rc; the guest did not report PASS: see $LOG"
