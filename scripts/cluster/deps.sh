#!/usr/bin/env bash
# Installs what the test hosts and the cluster launchers need (Debian):
# MPICH (hydra's mpiexec), Slurm (slurmctld, slurmd, srun), munge, and
# the namespace tools. Idempotent; CI calls it.
set -euo pipefail
pkgs=(mpich slurmd slurmctld slurm-client munge iproute2 util-linux iputils-ping)
missing=()
for p in "${pkgs[@]}"; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "cluster tools: mpich $(dpkg-query -W -f '${Version}' mpich); $(slurmd -V 2>/dev/null); $(munged -V 2>/dev/null | awk '{print $1}')"
