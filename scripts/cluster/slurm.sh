#!/usr/bin/env bash
# A real Slurm cluster on one machine, over the test hosts of hosts.sh:
# munged (root namespace; its socket is a path every namespace sees),
# slurmctld in "head", one slurmd per host h1..hN in its namespace.
#
#   slurm.sh up N        hosts.sh up N, then start munge and the daemons
#                        and wait until every node is idle
#   slurm.sh srun ARGS   run srun from head (e.g. --mpi=pmi2 -N 2 -n 4 prog)
#   slurm.sh down        stop the daemons (munged too, and its key, when
#                        up made them), remove the state (not the hosts)
#   slurm.sh logs        the daemons' log tails
#
# State, spool, pid and log files live in $GOSHMEM_SLURM_DIR (default
# /tmp/goshmem-slurm); the generated slurm.conf is there too.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
D=${GOSHMEM_SLURM_DIR:-/tmp/goshmem-slurm}
CONF=$D/slurm.conf
export SLURM_CONF=$CONF

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }

logs() {
	for f in "$D"/*.log; do
		[ -e "$f" ] || continue
		echo "== $f"
		tail -n 15 "$f"
	done
}

# start_munge starts munged unless one runs, and records in $D what it
# made (munged's pid, the key) for cmd_down to undo, and only that.
start_munge() {
	# One that answers is used as it is (pgrep would also count one that
	# has exited and is not reaped yet).
	if munge -n >/dev/null 2>&1; then return; fi
	if [ ! -s /etc/munge/munge.key ]; then
		dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
		touch "$D/munge.key.made"
	fi
	chown munge:munge /etc/munge/munge.key
	chmod 0400 /etc/munge/munge.key
	mkdir -p /run/munge /var/log/munge /var/lib/munge
	chown munge:munge /run/munge /var/log/munge /var/lib/munge
	runuser -u munge -- /usr/sbin/munged
	for _ in $(seq 50); do
		if munge -n >/dev/null 2>&1; then
			cp /run/munge/munged.pid "$D/munged.pid" 2>/dev/null || pgrep -x munged >"$D/munged.pid"
			return
		fi
		sleep 0.1
	done
	echo "slurm.sh: munged does not answer" >&2
	exit 1
}

write_conf() {
	local n=$1 cpus
	cpus=$(nproc)
	mkdir -p "$D/state" "$D/spool"
	cat >"$CONF" <<CONF
ClusterName=goshmem
SlurmctldHost=head(${GOSHMEM_TESTNET:-198.51.100}.100)
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd-%n.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd-%n.log
SlurmctldPort=6817
SlurmdPort=6818
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
KillWait=2
NodeName=h[1-$n] CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
	# NodeAddr: the names resolve through /etc/hosts (hosts.sh).
}

cmd_up() {
	local n=${1:-}
	if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ]; then
		echo "slurm.sh up: give the number of hosts" >&2
		exit 2
	fi
	for c in slurmctld slurmd srun sinfo munged; do
		command -v "$c" >/dev/null || { echo "slurm.sh: $c not found (scripts/cluster/deps.sh installs it)" >&2; exit 1; }
	done
	cmd_down >/dev/null 2>&1 || true
	"$here/hosts.sh" up "$n" >/dev/null
	mkdir -p "$D"
	start_munge
	write_conf "$n"
	"$here/hosts.sh" exec head slurmctld -f "$CONF" -i
	for i in $(seq 1 "$n"); do
		mkdir -p "$D/spool/h$i"
		"$here/hosts.sh" exec "h$i" slurmd -f "$CONF"
	done
	for _ in $(seq 150); do
		local idle
		idle=$("$here/hosts.sh" exec head sinfo -h -N -o %T 2>/dev/null | grep -c '^idle' || true)
		if [ "$idle" = "$n" ]; then
			echo "slurm up: $n nodes idle"
			return
		fi
		sleep 0.2
	done
	echo "slurm.sh up: the nodes did not become idle within 30 s" >&2
	"$here/hosts.sh" exec head sinfo -N -l >&2 || true
	logs >&2
	exit 1
}

cmd_down() {
	# Every variable local: cmd_up calls this, and bash's scoping would
	# let a loop here overwrite cmd_up's n.
	local pids=() nets=() f h p n ns
	for f in "$D"/slurmctld.pid "$D"/slurmd-*.pid; do
		[ -e "$f" ] || continue
		p=$(cat "$f" 2>/dev/null || true)
		[ -n "$p" ] && kill -TERM "$p" 2>/dev/null && pids+=("$p")
	done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
	done
	# Step daemons of this cluster: those in a test host's network
	# namespace (a Slurm of the machine itself is left alone).
	for h in $("$here/hosts.sh" list 2>/dev/null || true); do
		[ -e "/run/netns/$h" ] && nets+=("net:[$(stat -L -c %i "/run/netns/$h")]")
	done
	for p in $(pgrep -x slurmstepd || true); do
		ns=$(readlink "/proc/$p/ns/net" 2>/dev/null || true)
		for n in "${nets[@]}"; do
			[ "$ns" = "$n" ] && kill -KILL "$p" 2>/dev/null || true
		done
	done
	# munged and its key, if start_munge made them.
	if [ -s "$D/munged.pid" ]; then
		p=$(cat "$D/munged.pid")
		kill -TERM "$p" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	fi
	if [ -e "$D/munge.key.made" ]; then
		rm -f /etc/munge/munge.key
	fi
	rm -rf "$D"
	echo "slurm down"
}

case "${1:-}" in
up) shift; cmd_up "$@" ;;
down) cmd_down ;;
srun) shift; exec "$here/hosts.sh" exec head env SLURM_CONF="$CONF" srun "$@" ;;
logs) logs ;;
-h | --help | help | "") usage ;;
*) echo "slurm.sh: unknown command $1" >&2; usage >&2; exit 2 ;;
esac
