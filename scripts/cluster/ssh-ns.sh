#!/usr/bin/env bash
# What MPICH's hydra calls instead of ssh (mpiexec -launcher ssh
# -launcher-exec ssh-ns.sh): like ssh, options first, then the host,
# then the command; it runs the command in that test host's network
# namespace (hosts.sh exec).
set -euo pipefail
while [ $# -gt 0 ]; do
	case "$1" in
	-[1246AaCfgKkMNnqsTtVvXxYy]) shift ;;           # ssh flags without an argument
	-[BbcDEeFIiJLlmOopQRSWw]) shift 2 ;;            # ssh options with an argument
	-[BbcDEeFIiJLlmOopQRSWw]*) shift ;;             # ... attached
	--) shift; break ;;
	*) break ;;
	esac
done
host=${1:?ssh-ns.sh: no host}
shift
exec "$(dirname "$0")/hosts.sh" exec "$host" sh -c "$*"
