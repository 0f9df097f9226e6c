#!/usr/bin/env bash
# Test hosts on one machine: network namespaces on a bridge, each with
# its own host name, for running goshmem jobs across "hosts" under the
# cluster's real launchers (see README.md here).
#
#   hosts.sh up N          create head and h1..hN (idempotent)
#   hosts.sh down          remove them, and every process inside
#   hosts.sh exec NAME CMD run CMD in host NAME's network namespace with
#                          host name NAME
#   hosts.sh list          the hosts that exist
#
# Addresses: h<i> is 198.51.100.<i>/24 (a documentation range;
# GOSHMEM_TESTNET=a.b.c picks another /24), head is .100; the names are
# in /etc/hosts between goshmem markers. The
# launcher side lives in "head": the root namespace does not answer on
# the bridge.
set -euo pipefail

BR=gsbr0
NET=${GOSHMEM_TESTNET:-198.51.100}
MARK_BEGIN="# goshmem test hosts begin"
MARK_END="# goshmem test hosts end"

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }

need_root() {
	if [ "$(id -u)" != 0 ]; then
		echo "hosts.sh: needs root (network namespaces)" >&2
		exit 1
	fi
}

addr_of() {
	case "$1" in
	head) echo "$NET.100" ;;
	h[0-9]*) echo "$NET.${1#h}" ;;
	*) echo "hosts.sh: unknown host $1" >&2; exit 1 ;;
	esac
}

hosts() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^(head|h[0-9]+)$' || true; }

add_host() {
	local name=$1 addr
	addr=$(addr_of "$name")
	if ! ip netns list | awk '{print $1}' | grep -qx "$name"; then
		ip netns add "$name"
	fi
	if ! ip link show "gs-$name" >/dev/null 2>&1; then
		ip link add "gs-$name" type veth peer name eth0 netns "$name"
	fi
	ip link set "gs-$name" master "$BR"
	ip link set "gs-$name" up
	ip -n "$name" link set lo up
	ip -n "$name" link set eth0 up
	if ! ip -n "$name" addr show dev eth0 | grep -q "inet $addr/"; then
		ip -n "$name" addr add "$addr/24" dev eth0
	fi
}

write_hosts_file() {
	local tmp
	tmp=$(mktemp)
	sed "/^$MARK_BEGIN\$/,/^$MARK_END\$/d" /etc/hosts >"$tmp"
	if [ $# -gt 0 ]; then
		{
			echo "$MARK_BEGIN"
			for h in "$@"; do echo "$(addr_of "$h") $h"; done
			echo "$MARK_END"
		} >>"$tmp"
	fi
	cat "$tmp" >/etc/hosts # keep the inode (bind mounts)
	rm -f "$tmp"
}

cmd_up() {
	local n=${1:-}
	if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 99 ]; then
		echo "hosts.sh up: give the number of hosts, 1 to 99" >&2
		exit 2
	fi
	need_root
	# The range must be free here: a machine that has an address in it
	# (the development VMs have 192.0.2.2) would answer for a test host.
	if ip -4 -o addr show | grep -v " gs-\| eth0@" | grep -q "inet $NET\."; then
		echo "hosts.sh up: this machine already has an address in $NET.0/24; set GOSHMEM_TESTNET to a free /24 (e.g. 203.0.113)" >&2
		exit 1
	fi
	if ! ip link show "$BR" >/dev/null 2>&1; then
		ip link add "$BR" type bridge
	fi
	ip link set "$BR" up
	local all=(head)
	for i in $(seq 1 "$n"); do all+=("h$i"); done
	for h in "${all[@]}"; do add_host "$h"; done
	write_hosts_file "${all[@]}"
	# Wait until head reaches every host (a new bridge port may take a
	# moment to forward); needs ping (deps.sh installs it).
	if command -v ping >/dev/null; then
		for i in $(seq 1 "$n"); do
			local ok=
			for _ in $(seq 50); do
				if nsenter --net=/run/netns/head ping -c 1 -W 1 "$NET.$i" >/dev/null 2>&1; then
					ok=1
					break
				fi
				sleep 0.1
			done
			if [ -z "$ok" ]; then
				echo "hosts.sh up: head cannot reach h$i ($NET.$i)" >&2
				exit 1
			fi
		done
	fi
	echo "hosts up: ${all[*]}"
}

cmd_down() {
	need_root
	for h in $(hosts); do
		# Every process in the namespace first.
		for pid in $(ip netns pids "$h" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
		ip link del "gs-$h" 2>/dev/null || true
		ip netns del "$h" 2>/dev/null || true
	done
	ip link del "$BR" 2>/dev/null || true
	write_hosts_file
	echo "hosts down"
}

cmd_exec() {
	local name=${1:-}
	shift || true
	if [ -z "$name" ] || [ $# -eq 0 ]; then
		echo "hosts.sh exec: give a host and a command" >&2
		exit 2
	fi
	need_root
	if [ ! -e "/run/netns/$name" ]; then
		echo "hosts.sh exec: no host $name (hosts.sh up N first)" >&2
		exit 1
	fi
	# nsenter keeps /sys/fs/cgroup (ip netns exec remounts /sys);
	# unshare --uts gives the host its own name.
	exec nsenter --net="/run/netns/$name" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$name" "$@"
}

case "${1:-}" in
up) shift; cmd_up "$@" ;;
down) cmd_down ;;
exec) shift; cmd_exec "$@" ;;
list) hosts ;;
-h | --help | help | "") usage ;;
*) echo "hosts.sh: unknown command $1" >&2; usage >&2; exit 2 ;;
esac
