#!/usr/bin/env bash
# kafka-chaos: a Docker-API-compatible Podman service on this machine, for the containers backend.
#
# Machines without a Docker engine or a reachable image registry (see ENVIRONMENT.md) can still run
# the containers backend's own code path: this script
#   1. installs podman + runc (+ busybox-static) with apt when missing (root only),
#   2. writes containers.conf (runtime runc, ulimits) and storage.conf (vfs) under $STATE,
#   3. starts `podman system service` on unix://$STATE/podman.sock (unless it already answers),
#   4. builds the local runtime image (a static busybox root file system; host Java, host Python
#      and the project's venv are bind-mounted read-only at run time by the backend) and tags it
#      localhost/kafka-chaos-{runtime,zookeeper,broker,toxiproxy}:latest. The Apache Kafka broker
#      image (localhost/kafka-chaos-kafka:<version>: this root file system plus the cache install's
#      jars under /opt/kafka) is built from it by the backend when a run first needs it
#      (harness/cluster/containers_ready.py, ensure_kafka_image; compose/README.md).
# It is idempotent: run it again and it only checks. It prints the environment to use, e.g.
#   eval "$(compose/podman/setup.sh --env)"
#
# Options: --env   print only the `export` lines (for eval); --stop  stop the service it started;
#          --check exit 0 when the service answers and the image exists, 1 otherwise (no changes).
# Environment: KAFKA_CHAOS_PODMAN_DIR (default /tmp/kafka-chaos-podman-$UID) holds config, storage,
#          the socket, the service's pid and log. KAFKA_CHAOS_NO_APT=1 never calls apt-get.
set -euo pipefail

STATE="${KAFKA_CHAOS_PODMAN_DIR:-/tmp/kafka-chaos-podman-$(id -u)}"
SOCK="$STATE/podman.sock"
IMAGE_BASE="localhost/kafka-chaos"
MODE="${1:-}"

log() { if [ "$MODE" != "--env" ]; then echo "podman-setup: $*" >&2; fi; }
die() { echo "podman-setup: error: $*" >&2; exit 1; }

env_lines() {
  echo "export DOCKER_HOST=unix://$SOCK"
  echo "export TESTCONTAINERS_RYUK_DISABLED=true"
  echo "export TESTCONTAINERS_CONNECTION_MODE=docker_host"
  echo "export KAFKA_CHAOS_LOCAL_IMAGES=1"
}

podman_env() {
  export CONTAINERS_CONF="$STATE/containers.conf"
  export CONTAINERS_STORAGE_CONF="$STATE/storage.conf"
}

service_answers() {
  [ -S "$SOCK" ] || return 1
  if command -v curl >/dev/null 2>&1; then
    curl -fsS --max-time 3 --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1
  else
    podman_env; timeout 5 podman --url "unix://$SOCK" version >/dev/null 2>&1
  fi
}

image_exists() {
  podman_env
  podman --url "unix://$SOCK" image exists "$IMAGE_BASE-runtime:latest" >/dev/null 2>&1
}

if [ "$MODE" = "--check" ]; then
  command -v podman >/dev/null 2>&1 && service_answers && image_exists && exit 0
  exit 1
fi

if [ "$MODE" = "--stop" ]; then
  if [ -f "$STATE/service.pid" ]; then
    pid="$(cat "$STATE/service.pid")"
    if kill -0 "$pid" 2>/dev/null; then kill "$pid"; log "stopped podman service (pid $pid)"; fi
    rm -f "$STATE/service.pid"
  fi
  exit 0
fi

# 1. packages -------------------------------------------------------------------------------------
need=()
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v runc >/dev/null 2>&1 || need+=(runc)
static_busybox() {  # a busybox that runs without the host's libraries (ldd says it is not dynamic)
  [ -x /bin/busybox ] && { LC_ALL=C ldd /bin/busybox 2>&1 || true; } | grep -q "not a dynamic executable"
}
static_busybox || need+=(busybox-static)
if [ "${#need[@]}" -gt 0 ]; then
  [ "${KAFKA_CHAOS_NO_APT:-}" = 1 ] && die "missing ${need[*]} and KAFKA_CHAOS_NO_APT=1"
  [ "$(id -u)" = 0 ] || die "missing ${need[*]}; run as root (apt-get install -y ${need[*]})"
  command -v apt-get >/dev/null 2>&1 || die "missing ${need[*]} and no apt-get here"
  log "installing ${need[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq "${need[@]}" >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1 || true
    apt-get install -y -qq "${need[@]}" >/dev/null || die "apt-get install ${need[*]} failed"
  fi
fi
BUSYBOX=/bin/busybox
static_busybox || die "$BUSYBOX is not a static busybox (install busybox-static)"

# 2. configuration --------------------------------------------------------------------------------
mkdir -p "$STATE/storage" "$STATE/run" "$STATE/tmp"
cat >"$STATE/containers.conf" <<EOF
# written by compose/podman/setup.sh (kafka-chaos): crun fails here (setrlimit, hybrid cgroups)
[containers]
default_ulimits = ["nofile=10000:10000", "nproc=4096:4096"]
[engine]
runtime = "runc"
events_logger = "file"
cgroup_manager = "cgroupfs"
tmp_dir = "$STATE/tmp"
EOF
cat >"$STATE/storage.conf" <<EOF
# written by compose/podman/setup.sh (kafka-chaos)
[storage]
driver = "vfs"
graphroot = "$STATE/storage"
runroot = "$STATE/run"
EOF
podman_env

# 3. the service ----------------------------------------------------------------------------------
# A service whose working directory was deleted (a removed checkout it was started from) still answers,
# but conmon then fails every container start ("Failed to get working directory"): replace it.
if [ -f "$STATE/service.pid" ] && readlink "/proc/$(cat "$STATE/service.pid")/cwd" 2>/dev/null | grep -q '(deleted)$'; then
  log "the running podman service lost its working directory: restarting it"
  kill "$(cat "$STATE/service.pid")" 2>/dev/null || true
  for _ in $(seq 1 50); do service_answers || break; sleep 0.1; done
fi
if ! service_answers; then
  rm -f "$SOCK"
  log "starting podman system service on unix://$SOCK (log $STATE/service.log)"
  # started from / so that no checkout it was started from can take its working directory away
  setsid sh -c 'cd / && exec "$0" "$@"' podman system service --time=0 "unix://$SOCK" \
    >>"$STATE/service.log" 2>&1 < /dev/null &
  echo $! >"$STATE/service.pid"
  for _ in $(seq 1 100); do service_answers && break; sleep 0.1; done
  service_answers || die "podman service did not answer on $SOCK; see $STATE/service.log"
fi

# 4. the local runtime image ----------------------------------------------------------------------
if ! image_exists; then
  log "building $IMAGE_BASE-runtime:latest from $BUSYBOX"
  root="$(mktemp -d "$STATE/tmp/rootfs.XXXXXX")"
  trap 'rm -rf "$root" "$root.tar"' EXIT
  mkdir -p "$root"/{bin,etc,tmp,data,conf,proc,sys,dev,run,var/tmp,usr}
  chmod 1777 "$root/tmp" "$root/var/tmp"
  cp "$BUSYBOX" "$root/bin/busybox"
  for applet in sh cat ls env sleep printf echo mkdir rm kill ps tail head grep; do
    ln -s busybox "$root/bin/$applet"
  done
  ln -s usr/lib "$root/lib"          # host /usr is mounted at run time (merged-usr layout)
  ln -s usr/lib64 "$root/lib64"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
  printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
  tar -C "$root" -cf "$root.tar" .
  podman --url "unix://$SOCK" import --change 'ENV PATH=/bin:/usr/bin:/usr/local/bin' \
    --change 'CMD ["/bin/sh"]' "$root.tar" "$IMAGE_BASE-runtime:latest" >/dev/null
  for role in zookeeper broker toxiproxy; do
    podman --url "unix://$SOCK" tag "$IMAGE_BASE-runtime:latest" "$IMAGE_BASE-$role:latest"
  done
fi

if [ "$MODE" = "--env" ]; then
  env_lines
else
  log "ready: Docker API at unix://$SOCK, images $IMAGE_BASE-{runtime,zookeeper,broker,toxiproxy}:latest"
  log "use it with:"
  env_lines
fi
