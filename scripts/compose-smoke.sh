#!/usr/bin/env bash
# The compose stack (deploy/compose.yaml with the CI override deploy/compose.ci.yaml: local
# nginx/PostgreSQL/Redis/Prometheus images from Debian's packages, an anvil chain) brought up
# with podman-compose: JSON-RPC through the load balancer reaches both instances, one instance is
# killed, requests through the load balancer keep succeeding, then `down`. Grafana is left out
# (no Debian package). Skips, saying why, where podman or podman-compose cannot run.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
skip() { echo "compose-smoke: SKIP: $*"; exit 0; }
step() { printf 'compose-smoke [%3ss] %s\n' "$SECONDS" "$*"; }
setup="${HALYARD_OCI_SETUP:-}"
if [ -n "$setup" ] && [ -x "$setup" ]; then eval "$("$setup" 2>/dev/null)" || skip "$setup failed"; fi
command -v podman-compose >/dev/null || skip "podman-compose is not installed"
podman info >/dev/null 2>&1 || skip "podman cannot run here"
export HALYARD_IMAGE="${HALYARD_IMAGE:-localhost/halyard:smoke}"
podman image exists "$HALYARD_IMAGE" || skip "no $HALYARD_IMAGE image: run scripts/image-smoke.sh first"
export HALYARD_SECRET_KEY="$(node -e "console.log(require('crypto').randomBytes(32).toString('hex'))")"
export HALYARD_CONFIG_FILE=./ci/halyard.ci.yaml
cd "$repo/deploy"
pc() { podman-compose -p halyard-smoke -f compose.yaml -f compose.ci.yaml "$@"; }
trap 'pc down -v >/dev/null 2>&1 || true' EXIT
step "build the CI stand-in images"
pc build lb postgres redis prometheus >/dev/null
step "up"
pc up -d anvil postgres redis halyard-1 halyard-2 lb prometheus >/dev/null
for _ in $(seq 1 240); do curl -fs -o /dev/null http://127.0.0.1:8080/health && break; sleep 1; done
curl -fsS http://127.0.0.1:8080/health >/dev/null || { pc logs --tail 30 || true; exit 1; }
key="$(podman exec halyard-smoke_halyard-1_1 sh -c 'node bin/halyard.mjs accounts create --email smoke@example.com >/dev/null; node bin/halyard.mjs keys create --account smoke@example.com --env test | tail -n1')"
count() { podman exec "halyard-smoke_$1_1" node -e "fetch('http://127.0.0.1:8080/metrics').then(r=>r.text()).then(t=>{let n=0;for(const l of t.split('\n'))if(l.startsWith('halyard_http_requests_total{')&&l.includes('/rpc'))n+=Number(l.split(' ').pop());console.log(n)})"; }
rpc() { curl -s --max-time 10 -o /dev/null -w '%{http_code}' -H 'content-type: application/json' -H "authorization: Bearer $key" \
  -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' http://127.0.0.1:8080/v1/rpc/ethereum/devnet; }
ok=0; for _ in $(seq 1 40); do [ "$(rpc)" = 200 ] && ok=$((ok + 1)); done
step "40 eth_chainId through the load balancer: $ok answered 200; instance 1 served $(count halyard-1), instance 2 served $(count halyard-2)"
[ "$ok" = 40 ] || exit 1
podman kill halyard-smoke_halyard-2_1 >/dev/null
failed=0; for _ in $(seq 1 40); do [ "$(rpc)" = 200 ] || failed=$((failed + 1)); done
step "halyard-2 killed; 40 more calls: $failed failed"
[ "$failed" = 0 ] || exit 1
step "PASS"
