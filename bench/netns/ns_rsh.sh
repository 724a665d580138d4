#!/usr/bin/env bash
# mpirun's remote shell for the netns cluster (--mca plm_rsh_agent bench/netns/ns_rsh.sh): "ssh" to
# 10.213.0.K runs the command in namespace lsn-h<K-1> (cluster.sh's addresses), so orted and its ranks
# live on that simulated host. Usage (by mpirun only): ns_rsh.sh [ssh options] HOST CMD...
while [[ ${1:-} == -* ]]; do shift; done
host=$1
shift
[[ $host =~ ^10\.213\.0\.([0-9]+)$ ]] || { echo "ns_rsh.sh: host must be a cluster.sh address 10.213.0.K, got '$host'" >&2; exit 2; }
exec ip netns exec "lsn-h$((BASH_REMATCH[1] - 1))" sh -c "$*"
