#!/usr/bin/env bash
# N simulated hosts on one machine: network namespaces lsn-h0..lsn-h<N-1> (10.213.0.1..N/24), each joined by
# a veth pair to a bridge that lives in its own namespace lsn-sw, so the root namespace is never touched.
# Both directions of every link are shaped with tbf (the host's egress, and the switch port's egress, i.e.
# the host's ingress) to --rate; --delay adds netem delay where the kernel has sch_netem.
#
#   sudo bench/netns/cluster.sh up N [--rate 1gbit] [--delay 0]   # 2 <= N <= 8
#   sudo bench/netns/cluster.sh exec I CMD...                      # run CMD on host I
#   sudo bench/netns/cluster.sh down                               # remove every lsn-* namespace
#   sudo bench/netns/cluster.sh check                              # prerequisites only
#
# Normally driven by bench/netns/run.py, which tears the cluster down on exit.
set -euo pipefail

readonly PREFIX=lsn
readonly SUBNET=10.213.0

die() { echo "cluster.sh: $*" >&2; exit 2; }

check() {
  [[ $(id -u) == 0 ]] || die "needs root (network namespaces, veth, tc); run it with sudo"
  command -v ip > /dev/null || die "needs 'ip' (iproute2)"
  command -v tc > /dev/null || die "needs 'tc' (iproute2)"
}

# The bucket holds 128 KiB or 200 us at the rate, whichever is larger: with 16 KiB, bidirectional TCP lost
# half its throughput here. The price: a burst up to the bucket's size leaves at veth speed (docs/scaling.md).
burst_for() {
  python3 - "$1" << 'EOF'
import re, sys
m = re.fullmatch(r"([\d.]+)([kmg]?)bit", sys.argv[1].lower())
if not m: sys.exit("cluster.sh: --rate must look like 500mbit, 1gbit or 10gbit, got " + sys.argv[1])
bits = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
print(max(131072, int(bits / 8 * 200e-6)))
EOF
}

shape() {  # shape NS DEV
  local ns=$1 dev=$2
  if [[ $DELAY != 0 ]]; then
    ip netns exec "$ns" tc qdisc add dev "$dev" root netem delay "$DELAY" rate "$RATE" limit 100000 2> /dev/null ||
      die "this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM); run with --delay 0 and add the link latency in the model"
  else
    ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$RATE" burst "$BURST" latency 50ms
  fi
}

down() {
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep "^$PREFIX-" || true); do ip netns del "$ns"; done
}

up() {
  local n=$1
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 2 && n <= 8)) || die "N must be 2..8, got '$n'"
  if ip netns list | grep -q "^$PREFIX-"; then die "lsn-* namespaces already exist; run '$0 down' first"; fi
  BURST=$(burst_for "$RATE") || exit 2
  ip netns add "$PREFIX-sw"
  ip -n "$PREFIX-sw" link set lo up
  ip -n "$PREFIX-sw" link add br0 type bridge
  ip -n "$PREFIX-sw" link set br0 up
  local i ns
  for ((i = 0; i < n; i++)); do
    ns=$PREFIX-h$i
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip link add veth0 netns "$ns" type veth peer name "p$i" netns "$PREFIX-sw"
    ip -n "$ns" addr add "$SUBNET.$((i + 1))/24" dev veth0
    ip -n "$ns" link set veth0 up
    ip -n "$PREFIX-sw" link set "p$i" master br0 up
    shape "$ns" veth0
    shape "$PREFIX-sw" "p$i"
  done
  # A refused connection (nothing listens on port 9) proves the path works; a timeout means it does not.
  for ((i = 1; i < n; i++)); do
    local rc=0
    ip netns exec "$PREFIX-h0" timeout 3 bash -c "echo > /dev/tcp/$SUBNET.$((i + 1))/9" 2> /dev/null || rc=$?
    ((rc != 124)) || die "host 0 cannot reach host $i"
  done
  echo "cluster.sh: $n hosts $SUBNET.1-$n, rate $RATE (tbf burst $BURST B), delay $DELAY"
}

RATE=1gbit
DELAY=0
cmd=${1:-}
shift || true
check
case $cmd in
  up)
    [[ $# -ge 1 ]] || die "usage: $0 up N [--rate R] [--delay D]"
    n=$1
    shift
    while [[ $# -gt 0 ]]; do
      case $1 in
        --rate) RATE=$2; shift 2 ;;
        --delay) DELAY=$2; shift 2 ;;
        *) die "unknown option $1 (expected --rate, --delay)" ;;
      esac
    done
    trap 'rc=$?; ((rc == 0)) || down; exit $rc' EXIT
    up "$n"
    ;;
  exec)
    [[ $# -ge 2 ]] || die "usage: $0 exec I CMD..."
    i=$1
    shift
    exec ip netns exec "$PREFIX-h$i" "$@"
    ;;
  down) down ;;
  check) ;;
  *) die "usage: $0 up N [--rate R] [--delay D] | exec I CMD... | down | check" ;;
esac
