# shellcheck shell=bash disable=SC2034  # the variables are used by start/stop/logs
# Shared settings and helpers for deploy/kafka/{start,stop,logs}. Sourced, not run.

KAFKA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
# --secure (start, stop, logs: KAFKA_SECURE=1) is a second broker with only
# SASL_SSL listeners, on ports and in a run dir of its own, so both can run
# at once.
KAFKA_SECURE="${KAFKA_SECURE:-0}"
# --cluster (start, stop, logs, node, leader, coordinator: KAFKA_CLUSTER=1)
# is three nodes, each a broker and a KRaft controller in one JVM, in a run
# dir of their own (one sub dir per node). Node N listens for clients on
# KAFKA_CLUSTER_PORT + (N-1)*KAFKA_CLUSTER_PORT_STEP and for the controller
# quorum on the port after it: 19192/19193, 19292/19293, 19392/19393.
KAFKA_CLUSTER="${KAFKA_CLUSTER:-0}"
KAFKA_CLUSTER_NODES=3
KAFKA_CLUSTER_PORT="${KAFKA_CLUSTER_PORT:-19192}"
KAFKA_CLUSTER_PORT_STEP="${KAFKA_CLUSTER_PORT_STEP:-100}"
KAFKA_CLUSTER_RUN_DIR="${KAFKA_CLUSTER_RUN_DIR:-$KAFKA_DIR/.run-cluster}"
# Three JVMs on a small machine: a smaller heap each than the single node's.
KAFKA_CLUSTER_HEAP_OPTS="${KAFKA_CLUSTER_HEAP_OPTS:--Xms128m -Xmx384m}"
if [[ "$KAFKA_SECURE" == 1 && "$KAFKA_CLUSTER" == 1 ]]; then
  printf 'kafka: ERROR: --secure and --cluster cannot be combined\n' >&2
  exit 1
fi
if [[ "$KAFKA_SECURE" == 1 ]]; then
  KAFKA_PORT="${KAFKA_SECURE_PORT:-19094}"
  KAFKA_CONTROLLER_PORT="${KAFKA_SECURE_CONTROLLER_PORT:-19095}"
  KAFKA_RUN_DIR="${KAFKA_SECURE_RUN_DIR:-$KAFKA_DIR/.run-secure}"
elif [[ "$KAFKA_CLUSTER" == 1 ]]; then
  # Until select_node picks one: the cluster's own dir (lock, cluster id).
  KAFKA_PORT="$KAFKA_CLUSTER_PORT"
  KAFKA_CONTROLLER_PORT=$(( KAFKA_CLUSTER_PORT + 1 ))
  KAFKA_RUN_DIR="$KAFKA_CLUSTER_RUN_DIR"
else
  KAFKA_PORT="${KAFKA_PORT:-19092}"
  KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-19093}"
  KAFKA_RUN_DIR="${KAFKA_RUN_DIR:-$KAFKA_DIR/.run}"
fi
KAFKA_CACHE_DIR="${KAFKA_CACHE_DIR:-${HOME:-/root}/.cache/toolexec-kafka/$KAFKA_VERSION}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"
KAFKA_STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx1g}"
[[ "$KAFKA_CLUSTER" == 1 ]] && KAFKA_HEAP_OPTS="$KAFKA_CLUSTER_HEAP_OPTS"

KAFKA_LIB_DIR="$KAFKA_CACHE_DIR/libs"
# The cluster id: one per run dir, or one for the three nodes of a cluster.
KAFKA_CLUSTER_ID_FILE="$KAFKA_RUN_DIR/cluster.id"
KAFKA_NODE_ID=1

# set_paths derives the per-broker paths from KAFKA_RUN_DIR.
set_paths() {
  KAFKA_PID_FILE="$KAFKA_RUN_DIR/kafka.pid"
  KAFKA_PORT_FILE="$KAFKA_RUN_DIR/kafka.port"
  KAFKA_LOG_FILE="$KAFKA_RUN_DIR/kafka.log"
  KAFKA_OUT_FILE="$KAFKA_RUN_DIR/kafka.out"
  KAFKA_PROPS="$KAFKA_RUN_DIR/server.properties"
  KAFKA_DATA_DIR="$KAFKA_RUN_DIR/data"
  # Written into every run dir we create; --wipe refuses to touch a dir without it.
  KAFKA_RUN_MARKER="$KAFKA_RUN_DIR/.toolexec-kafka-run"
  # --secure: the CA and broker certificate, the users' passwords, and one
  # client properties file per role (kcat -F and --kafka-config read them).
  KAFKA_TLS_DIR="$KAFKA_RUN_DIR/tls"
  KAFKA_SECRETS_DIR="$KAFKA_RUN_DIR/secrets"
  KAFKA_CLIENTS_DIR="$KAFKA_RUN_DIR/clients"
}
set_paths
KAFKA_ROLES="admin executor reconciler agent operator gateway topics"

# --cluster: node N's client port, controller port and run dir.
node_port() { echo $(( KAFKA_CLUSTER_PORT + ($1 - 1) * KAFKA_CLUSTER_PORT_STEP )); }
node_controller_port() { echo $(( $(node_port "$1") + 1 )); }
node_run_dir() { echo "$KAFKA_CLUSTER_RUN_DIR/node$1"; }

# select_node makes node N the broker the single-broker helpers below act
# on (broker_pid, is_our_broker, the paths).
select_node() {
  KAFKA_NODE_ID="$1"
  KAFKA_PORT="$(node_port "$1")"
  KAFKA_CONTROLLER_PORT="$(node_controller_port "$1")"
  KAFKA_RUN_DIR="$(node_run_dir "$1")"
  set_paths
}

# cluster_brokers prints the three client addresses, comma-separated.
cluster_brokers() {
  local n out=""
  for ((n = 1; n <= KAFKA_CLUSTER_NODES; n++)); do out+="${out:+,}127.0.0.1:$(node_port "$n")"; done
  echo "$out"
}

# check_node_number dies unless $1 is a node of the cluster.
check_node_number() {
  [[ "$1" =~ ^[0-9]+$ ]] && (( $1 >= 1 && $1 <= KAFKA_CLUSTER_NODES )) ||
    die "node '$1': want a number from 1 to $KAFKA_CLUSTER_NODES"
}

say() { printf 'kafka: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

is_port_number() {
  [[ "$1" =~ ^[0-9]{1,5}$ ]] && (( 10#$1 >= 1 && 10#$1 <= 65535 ))
}

# Something accepts TCP connections on 127.0.0.1:$1.
port_listening() {
  timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# The pid is a live broker started from this run dir (matched on the exact
# server.properties path in its command line, so never someone else's java).
is_our_broker() {
  local pid="$1" cmd
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ "$cmd" == *" kafka.Kafka $KAFKA_PROPS"* ]]
}

# Prints the pid of the broker of this run dir, if one runs: the pid file
# first, else a scan of /proc for our exact command line (lost pid file).
broker_pid() {
  local pid
  if [[ -f "$KAFKA_PID_FILE" ]]; then
    pid="$(cat "$KAFKA_PID_FILE" 2>/dev/null || true)"
    if is_our_broker "$pid"; then echo "$pid"; return 0; fi
  fi
  for d in /proc/[0-9]*; do
    pid="${d#/proc/}"
    if is_our_broker "$pid"; then echo "$pid"; return 0; fi
  done
  return 1
}

# Serialise start/stop on one run dir.
take_lock() {
  mkdir -p "$KAFKA_RUN_DIR"
  exec 9>"$KAFKA_RUN_DIR/.lock"
  if command -v flock >/dev/null 2>&1; then
    flock -w "${1:-120}" 9 || die "could not lock $KAFKA_RUN_DIR/.lock (another start/stop running?)"
  fi
}

print_log_tail() {
  local n="${1:-200}"
  if [[ -s "$KAFKA_LOG_FILE" ]]; then
    echo "----- last $n lines of $KAFKA_LOG_FILE -----"
    tail -n "$n" "$KAFKA_LOG_FILE"
  else
    echo "----- $KAFKA_LOG_FILE: missing or empty -----"
  fi
  if [[ -s "$KAFKA_OUT_FILE" ]] && (( $(wc -l <"$KAFKA_OUT_FILE") > 1 )); then
    echo "----- last 50 lines of $KAFKA_OUT_FILE (JVM stdout/stderr) -----"
    tail -n 50 "$KAFKA_OUT_FILE"
  fi
  echo "----- end of broker log -----"
}

# node_alive: node N's JVM runs and is not paused (SIGSTOP).
node_alive() {
  local pid
  select_node "$1"
  pid="$(broker_pid)" || return 1
  [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != T ]]
}

# topic_metadata prints kcat's metadata of TOPIC, asked of the live nodes
# one at a time (a paused node would keep the request until it times out).
topic_metadata() {
  local topic="$1" n out
  command -v kcat >/dev/null 2>&1 || die "kcat is missing (apt-get install kcat)"
  for ((n = 1; n <= KAFKA_CLUSTER_NODES; n++)); do
    node_alive "$n" || continue
    if out="$(timeout 5 kcat -b "127.0.0.1:$(node_port "$n")" -L -t "$topic" -m 3 2>&1)" &&
       grep -q "^ *partition " <<<"$out"; then
      printf '%s\n' "$out"
      return 0
    fi
  done
  die "no live node answered with $topic's partitions (does the topic exist? is the cluster up? deploy/kafka/node status)"
}

# partition_leader prints the node leading TOPIC's PARTITION.
partition_leader() {
  local topic="$1" partition="$2" leader
  leader="$(topic_metadata "$topic" | sed -nE "s/^ *partition $partition, leader (-?[0-9]+),.*/\1/p")"
  [[ -n "$leader" ]] || die "$topic has no partition $partition"
  [[ "$leader" != -1 ]] || die "$topic partition $partition has no leader now"
  echo "$leader"
}
