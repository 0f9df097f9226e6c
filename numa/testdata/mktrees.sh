#!/bin/sh
# mktrees.sh rebuilds the fake sysfs trees that topology_test.go reads
# (all but 2node and nonode, which are hand-made). The trees are
# committed as plain files; run this only to change them:
#
#	cd numa/testdata && sh mktrees.sh
#
# Each tree holds only the files Discover reads.
set -eu
cd "$(dirname "$0")"

# put FILE TEXT... writes TEXT (one line) to FILE, creating its directory.
put() {
	f=$1
	shift
	mkdir -p "$(dirname "$f")"
	printf '%s\n' "$*" >"$f"
}

# cache DIR INDEX LEVEL TYPE SIZE SHARED writes one cpu<N>/cache/index<K>.
cache() {
	d=$1/cache/index$2
	put "$d/level" "$3"
	put "$d/type" "$4"
	put "$d/size" "$5"
	put "$d/coherency_line_size" 64
	put "$d/shared_cpu_list" "$6"
}

# meminfo FILE NODE TOTAL_KB FREE_KB writes a node<N>/meminfo.
meminfo() {
	mkdir -p "$(dirname "$1")"
	printf 'Node %d MemTotal:       %d kB\nNode %d MemFree:        %d kB\nNode %d MemUsed:        %d kB\n' \
		"$2" "$3" "$2" "$4" "$2" $(($3 - $4)) >"$1"
}

# smt2x4x2 ROOT CACHES builds 2 sockets x 4 cores x 2 threads, Linux
# numbering (cpu N and N+8 are siblings), one node per socket; with
# CACHES=yes, L1d/L1i/L2 per core and L3 per socket.
smt2x4x2() {
	r=$1
	rm -rf "$r"
	c=$r/sys/devices/system/cpu
	n=$r/sys/devices/system/node
	put "$c/online" 0-15
	put "$c/present" 0-15
	for cpu in $(seq 0 15); do
		first=$((cpu % 8))
		sock=$((first / 4))
		put "$c/cpu$cpu/topology/core_id" $((first % 4))
		put "$c/cpu$cpu/topology/physical_package_id" $sock
		put "$c/cpu$cpu/topology/thread_siblings_list" "$first,$((first + 8))"
		if [ "$2" = yes ]; then
			l3=0-3,8-11
			[ $sock = 1 ] && l3=4-7,12-15
			cache "$c/cpu$cpu" 0 1 Data 32K "$first,$((first + 8))"
			cache "$c/cpu$cpu" 1 1 Instruction 32K "$first,$((first + 8))"
			cache "$c/cpu$cpu" 2 2 Unified 1024K "$first,$((first + 8))"
			cache "$c/cpu$cpu" 3 3 Unified 16384K "$l3"
		fi
	done
	put "$n/online" 0-1
	put "$n/has_memory" 0-1
	put "$n/node0/cpulist" 0-3,8-11
	put "$n/node1/cpulist" 4-7,12-15
	put "$n/node0/distance" 10 21
	put "$n/node1/distance" 21 10
	meminfo "$n/node0/meminfo" 0 65536000 60000000
	meminfo "$n/node1/meminfo" 1 65536000 50000000
}

smt2x4x2 2socket-smt yes

# cpuset: the same machine; the job's cgroup v2 cpuset is socket 1.
smt2x4x2 cpuset no
put cpuset/proc/self/cgroup 0::/job42
put cpuset/sys/fs/cgroup/job42/cpuset.cpus.effective 4-7,12-15
put cpuset/sys/fs/cgroup/job42/cpuset.mems.effective 1

# cpuset-v1: the same machine under cgroup v1 (Slurm-like); the job has
# cores 0 and 1 of socket 0 with their siblings.
smt2x4x2 cpuset-v1 no
mkdir -p cpuset-v1/proc/self
printf '%s\n' 12:memory:/slurm/job7 4:cpu,cpuacct:/slurm/job7 3:cpuset:/slurm/job7 \
	1:name=systemd:/user.slice 0::/user.slice >cpuset-v1/proc/self/cgroup
put cpuset-v1/sys/fs/cgroup/cpuset/slurm/job7/cpuset.effective_cpus 0-1,8-9
put cpuset-v1/sys/fs/cgroup/cpuset/slurm/job7/cpuset.effective_mems 0

# 4numa-socket: 1 socket, 16 cores without SMT, 4 nodes of 4 CPUs
# (sub-NUMA clustering, AMD NPS4), L3 per 4 cores.
r=4numa-socket
rm -rf $r
c=$r/sys/devices/system/cpu
n=$r/sys/devices/system/node
put $c/online 0-15
put $c/present 0-15
for cpu in $(seq 0 15); do
	put $c/cpu$cpu/topology/core_id $cpu
	put $c/cpu$cpu/topology/physical_package_id 0
	put $c/cpu$cpu/topology/thread_siblings_list $cpu
	l3=$((cpu / 4 * 4))-$((cpu / 4 * 4 + 3))
	cache $c/cpu$cpu 0 1 Data 32K $cpu
	cache $c/cpu$cpu 1 1 Instruction 32K $cpu
	cache $c/cpu$cpu 2 2 Unified 1M $cpu
	cache $c/cpu$cpu 3 3 Unified 32M $l3
done
put $n/online 0-3
put $n/has_memory 0-3
for node in 0 1 2 3; do
	put $n/node$node/cpulist $((node * 4))-$((node * 4 + 3))
	d=""
	for to in 0 1 2 3; do
		if [ $to = $node ]; then d="$d 10"; else d="$d 12"; fi
	done
	put $n/node$node/distance $d
	meminfo $n/node$node/meminfo $node 33554432 $((30000000 + node * 1000000))
done

# offline: 8 CPUs present (4 cores x 2 threads, cpu N and N+4 siblings),
# CPUs 2 and 5 offline. The online CPUs' sibling and cache lists still
# name the offline ones, which Discover must drop.
r=offline
rm -rf $r
c=$r/sys/devices/system/cpu
n=$r/sys/devices/system/node
put $c/online 0-1,3-4,6-7
put $c/present 0-7
for cpu in 0 1 3 4 6 7; do
	[ $cpu = 0 ] || put $c/cpu$cpu/online 1
	put $c/cpu$cpu/topology/core_id $((cpu % 4))
	put $c/cpu$cpu/topology/physical_package_id 0
	put $c/cpu$cpu/topology/thread_siblings_list "$((cpu % 4)),$((cpu % 4 + 4))"
	cache $c/cpu$cpu 3 3 Unified 8192K 0-7
done
put $c/cpu2/online 0
put $c/cpu5/online 0
put $n/online 0
put $n/node0/cpulist 0-1,3-4,6-7
put $n/node0/distance 10
meminfo $n/node0/meminfo 0 16384000 8000000

# memoryless: node 0 (CPUs 0-1, socket 0) has memory; node 1 (CPUs
# 2-3, socket 1) has none; node 2 has memory and no CPUs (CXL-like).
r=memoryless
rm -rf $r
c=$r/sys/devices/system/cpu
n=$r/sys/devices/system/node
put $c/online 0-3
put $c/present 0-3
for cpu in 0 1 2 3; do
	put $c/cpu$cpu/topology/core_id $((cpu % 2))
	put $c/cpu$cpu/topology/physical_package_id $((cpu / 2))
	put $c/cpu$cpu/topology/thread_siblings_list $cpu
done
put $n/online 0-2
put $n/has_memory 0,2
put $n/node0/cpulist 0-1
put $n/node1/cpulist 2-3
put $n/node2/cpulist ""
put $n/node0/distance 10 21 14
put $n/node1/distance 21 10 24
put $n/node2/distance 14 24 10
meminfo $n/node0/meminfo 0 8192000 7000000
meminfo $n/node1/meminfo 1 0 0
meminfo $n/node2/meminfo 2 67108864 67000000
