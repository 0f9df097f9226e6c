#!/usr/bin/env bash
# Runs MPICH's mpiexec (hydra) across the test hosts: from the head
# namespace, starting each host's proxy in its own namespace through
# ssh-ns.sh, as a cluster would over ssh.
#
#   mpiexec.sh -hosts h1,h2 -n 4 [-ppn 2] PROG ARGS...
#
# Every option is hydra's; the environment is passed to every process
# (-genvall). HYDRA_LAUNCHER_AUTOFORK=0 makes hydra use ssh-ns.sh even
# for hosts that resolve locally.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
hydra=$(command -v mpiexec.hydra) || { echo "mpiexec.sh: mpiexec.hydra not found (apt-get install mpich)" >&2; exit 1; }
export HYDRA_LAUNCHER_AUTOFORK=0
exec "$here/hosts.sh" exec head "$hydra" -launcher ssh -launcher-exec "$here/ssh-ns.sh" -iface eth0 -genvall "$@"
