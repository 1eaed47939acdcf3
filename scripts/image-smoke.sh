#!/usr/bin/env bash
# Builds the container image (Dockerfile) with podman and smoke-tests it: `dev` (health, one
# JSON-RPC call with the printed key, the user is not root, HEALTHCHECK, seconds from
# `podman stop` to exit) and the default `serve` with a mounted config (health, stop time).
# Where no registry can be reached, HALYARD_OCI_SETUP names a script that prints the podman
# environment and provides the base image offline (.ci/run names the machine's one). Exits 0 with "image-smoke: SKIP: <reason>" where podman cannot run.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
skip() { echo "image-smoke: SKIP: $*"; exit 0; }
step() { printf 'image-smoke [%3ss] %s\n' "$SECONDS" "$*"; }

setup="${HALYARD_OCI_SETUP:-}"
if [ -n "$setup" ] && [ -x "$setup" ]; then
  step "podman environment from $setup"
  env_lines="$("$setup" 2>"${TMPDIR:-/tmp}/halyard-image-smoke-setup.log")" ||
    skip "$setup failed (tail: $(tail -n 3 "${TMPDIR:-/tmp}/halyard-image-smoke-setup.log" | tr '\n' ' '))"
  eval "$env_lines"
fi
command -v podman >/dev/null || skip "podman is not installed (and no HALYARD_OCI_SETUP script)"
podman info >/dev/null 2>&1 || skip "podman cannot run here: $(podman info 2>&1 | tail -n1)"
# No registry here: the base image must already be in podman's store (HALYARD_OCI_SETUP provides
# it offline). Without it the build cannot start, which is not a defect of the image.
base="$(sed -n 's/^ARG NODE_IMAGE=//p' "$repo/Dockerfile" | head -n1)"
if [ -n "$base" ] && ! podman image exists "$base"; then
  skip "base image $base is not in podman's store and no registry can be reached (set HALYARD_OCI_SETUP to a script that provides it offline)"
fi

image="${HALYARD_IMAGE:-localhost/halyard:smoke}"
tag="smoke-$$"
work="$(mktemp -d "${TMPDIR:-/tmp}/halyard-image-smoke.XXXXXX")"
cleanup() {
  podman rm -f -v -t 0 "$tag-dev" "$tag-serve" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "image-smoke: FAIL: $*" >&2
  for c in "$tag-dev" "$tag-serve"; do podman logs --tail 30 "$c" 2>/dev/null | sed "s/^/[$c] /" >&2 || true; done
  exit 1
}
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
wait_health() { # container port seconds
  for _ in $(seq 1 $(($3 * 2))); do
    curl -fs --max-time 2 -o /dev/null "http://127.0.0.1:$2/health" && return 0
    [ "$(podman inspect --format '{{.State.Running}}' "$1")" = true ] || fail "$1 exited before /health answered"
    sleep 0.5
  done
  fail "$1: no /health after $3 s"
}
stop_timed() { # container: podman stop (30 s grace), seconds to exit and the exit code
  local t0 t1 code
  t0=$(date +%s.%N)
  podman stop -t 30 "$1" >/dev/null
  t1=$(date +%s.%N)
  code="$(podman inspect --format '{{.State.ExitCode}}' "$1")"
  step "$1: exited $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s after podman stop (SIGTERM), exit code $code"
  [ "$code" = 0 ] || fail "$1 exit code $code after SIGTERM (137 = it had to be killed)"
}

t0=$SECONDS
step "podman build -t $image ."
podman build --pull=never -q -t "$image" "$repo" >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log"; fail "build failed"; }
size=$(podman image inspect --format '{{.Size}}' "$image")
step "built in $((SECONDS - t0)) s; image size $((size / 1000000)) MB"
user="$(podman image inspect --format '{{.Config.User}}' "$image")"
healthcheck="$(podman image inspect --format '{{json .Config.Healthcheck}}' "$image")"
[[ "$healthcheck" == *health* ]] || fail "no HEALTHCHECK on /health in the image (got $healthcheck)"
step "image user: $user; HEALTHCHECK kept"

# --- dev -------------------------------------------------------------------------------------------
port="$(free_port)"
podman run -d --name "$tag-dev" -p "127.0.0.1:$port:8080" -e HALYARD_LOG_LEVEL=warn "$image" dev >/dev/null
wait_health "$tag-dev" "$port" 240
step "dev: GET /health -> $(curl -fsS "http://127.0.0.1:$port/health")"
for _ in $(seq 1 60); do podman logs "$tag-dev" 2>&1 | grep -q 'API key:' && break; sleep 0.5; done
key="$(podman logs "$tag-dev" 2>&1 | sed -nE 's/.*API key:[[:space:]]+(\S+).*/\1/p' | head -n1)"
answer="$(curl -sS --max-time 10 -H 'content-type: application/json' -H "authorization: Bearer $key" \
  -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' "http://127.0.0.1:$port/v1/rpc/ethereum/devnet")"
step "dev: eth_chainId -> $answer"
[[ "$answer" == *'"result":"0x7a69"'* ]] || fail "eth_chainId answered $answer"
uid="$(podman exec "$tag-dev" id -u)"
step "dev: id -u -> $uid; PID 1 is $(podman exec "$tag-dev" cat /proc/1/cmdline | tr '\0' ' ')"
[ "$uid" != 0 ] || fail "the server runs as root"
podman healthcheck run "$tag-dev" >/dev/null || fail "podman healthcheck run failed"
step "dev: podman healthcheck run -> healthy"
stop_timed "$tag-dev"

# --- serve (the default command) with a mounted config --------------------------------------------
mkdir -p "$work/etc"
# The upstream need not answer for liveness: /health is up while /ready reports the upstream.
cat >"$work/etc/halyard.yaml" <<'YAML'
networks:
  - chain: ethereum
    network: devnet
    kind: evm
    chainId: 31337
    blockTimeMs: 1000
    upstreams:
      - url: http://127.0.0.1:9
YAML
chmod -R a+rX "$work/etc"
port="$(free_port)"
podman run -d --name "$tag-serve" -p "127.0.0.1:$port:8080" -v "$work/etc:/etc/halyard:ro" \
  -e HALYARD_LOG_LEVEL=warn -e HALYARD_SECRET_KEY="$(openssl rand -hex 32 2>/dev/null || node -e "console.log(require('crypto').randomBytes(32).toString('hex'))")" \
  -e HALYARD_PUBLIC_URL="http://127.0.0.1:$port" "$image" >/dev/null
wait_health "$tag-serve" "$port" 180
step "serve: GET /health -> $(curl -fsS "http://127.0.0.1:$port/health"); id -u -> $(podman exec "$tag-serve" id -u)"
stop_timed "$tag-serve"
step "PASS"
