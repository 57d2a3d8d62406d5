# shellcheck shell=bash disable=SC2034  # the variables are used by start/stop/logs
# Shared settings and helpers for deploy/kafka/{start,stop,logs}. Sourced, not run.

KAFKA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
# --secure (start, stop, logs: KAFKA_SECURE=1) is a second broker with only
# SASL_SSL listeners, on ports and in a run dir of its own, so both can run
# at once.
KAFKA_SECURE="${KAFKA_SECURE:-0}"
if [[ "$KAFKA_SECURE" == 1 ]]; then
  KAFKA_PORT="${KAFKA_SECURE_PORT:-19094}"
  KAFKA_CONTROLLER_PORT="${KAFKA_SECURE_CONTROLLER_PORT:-19095}"
  KAFKA_RUN_DIR="${KAFKA_SECURE_RUN_DIR:-$KAFKA_DIR/.run-secure}"
else
  KAFKA_PORT="${KAFKA_PORT:-19092}"
  KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-19093}"
  KAFKA_RUN_DIR="${KAFKA_RUN_DIR:-$KAFKA_DIR/.run}"
fi
KAFKA_CACHE_DIR="${KAFKA_CACHE_DIR:-${HOME:-/root}/.cache/toolexec-kafka/$KAFKA_VERSION}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"
KAFKA_STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx1g}"

KAFKA_LIB_DIR="$KAFKA_CACHE_DIR/libs"
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
KAFKA_ROLES="admin executor reconciler agent operator gateway"


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
