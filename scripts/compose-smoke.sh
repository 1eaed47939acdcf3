#!/usr/bin/env bash
# The compose stack (deploy/compose.yaml with the CI override deploy/compose.ci.yaml: local
# nginx/PostgreSQL/Redis/Prometheus images from Debian's packages, an anvil chain, an HTTPS
# webhook receiver) brought up with podman-compose: JSON-RPC through the load balancer reaches
# both instances, a webhook created through the load balancer is delivered for a transaction,
# one instance is killed, requests through the load balancer keep succeeding and a second
# transaction is still delivered, Prometheus scrapes the survivor, then `down`. Grafana is left
# out (no Debian package). Skips, saying why, where podman or podman-compose cannot run.
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
# The receiver's certificate, from a CA only this run's instances trust (HALYARD_WEBHOOK_CA_FILE).
tls="$(mktemp -d "${TMPDIR:-/tmp}/halyard-compose-smoke.XXXXXX")"
export HALYARD_SMOKE_TLS_DIR="$tls"
(
  cd "$tls"
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -days 2 -subj /CN=halyard-smoke-ca -keyout ca.key -out ca.crt
  openssl req "${ec[@]}" -subj /CN=receiver -keyout receiver.key -out receiver.csr
  printf 'subjectAltName=DNS:receiver\n' >ext
  openssl x509 -req -in receiver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile ext -out receiver.crt
  chmod 755 . && chmod 644 ./*
) >/dev/null 2>&1 || { echo "compose-smoke: FAIL: openssl could not make the receiver's certificate" >&2; exit 1; }
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
export HALYARD_LB_PORT="$(free_port)" PROMETHEUS_PORT="$(free_port)"
lb="http://127.0.0.1:$HALYARD_LB_PORT"
cd "$repo/deploy"
# podman-compose's and podman's own chatter goes to a log, shown when the run fails.
pc() { podman-compose -p halyard-smoke -f compose.yaml -f compose.ci.yaml "$@" >>"$tls/compose.log" 2>&1; }
finish() {
  local code=$?
  if [ "$code" != 0 ]; then
    for c in halyard-1 halyard-2 lb postgres receiver; do
      podman logs --tail 20 "halyard-smoke_${c}_1" 2>&1 | sed "s/^/[$c] /" >&2 || true
    done
  fi
  [ "$code" = 0 ] || tail -n 30 "$tls/compose.log" | sed 's/^/[podman-compose] /' >&2
  t=$SECONDS
  # The image's VOLUME /data gives each Halyard container an anonymous volume, which `down -v`
  # leaves behind: named here first, removed after.
  local anon
  anon="$(podman ps -aq --filter label=io.podman.compose.project=halyard-smoke |
    xargs -r podman inspect --format '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}' 2>/dev/null || true)"
  pc down -v || true
  # shellcheck disable=SC2086
  [ -z "${anon// /}" ] || podman volume rm -f $anon >/dev/null 2>&1 || true
  [ "$code" != 0 ] || step "down in $((SECONDS - t)) s; $(podman ps -a --filter label=io.podman.compose.project=halyard-smoke -q | wc -l) containers left"
  rm -rf "$tls"
}
trap finish EXIT
step "build the CI stand-in images"
pc build lb postgres redis prometheus
step "up"
pc up -d anvil postgres redis receiver halyard-1 halyard-2 lb prometheus
for _ in $(seq 1 240); do curl -fs -o /dev/null $lb/health && break; sleep 1; done
step "/health through the load balancer: $(curl -fsS --max-time 5 $lb/health)"
# Both instances up before the calls (the balancer answers as soon as one is), then past nginx's
# fail_timeout (5 s), so an instance it marked down while starting gets its share again.
healthy() { podman exec "halyard-smoke_$1_1" node -e "fetch('http://127.0.0.1:8080/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))" >/dev/null 2>&1; }
for inst in halyard-1 halyard-2; do
  for _ in $(seq 1 240); do healthy $inst && break; sleep 1; done
  healthy $inst || { echo "compose-smoke: FAIL: $inst never answered /health" >&2; exit 1; }
done
sleep 6
# The admin commands open their own database connection: on a loaded machine the first one can
# pass its connect timeout while PostgreSQL's container warms up, so a failed try is repeated.
key=""
for attempt in 1 2 3 4 5; do
  key="$(podman exec halyard-smoke_halyard-1_1 sh -c 'node bin/halyard.mjs accounts create --email smoke@example.com --plan enterprise >/dev/null 2>&1; node bin/halyard.mjs keys create --account smoke@example.com --env test 2>&1 | tail -n1')" || true
  case "$key" in halyard_test_*) break ;; esac
  step "creating the smoke's key, try $attempt: ${key:-no answer}; again in 3 s"
  sleep 3
done
count() { podman exec "halyard-smoke_$1_1" node -e "fetch('http://127.0.0.1:8080/metrics').then(r=>r.text()).then(t=>{let n=0;for(const l of t.split('\n'))if(l.startsWith('halyard_http_requests_total{')&&l.includes('/rpc'))n+=Number(l.split(' ').pop());console.log(n)})"; }
rpc() { curl -s --max-time 10 -o /dev/null -w '%{http_code}' -H 'content-type: application/json' -H "authorization: Bearer $key" \
  -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' $lb/v1/rpc/ethereum/devnet; }
ok=0; for _ in $(seq 1 40); do [ "$(rpc)" = 200 ] && ok=$((ok + 1)); done
served1="$(count halyard-1)"; served2="$(count halyard-2)"
step "40 eth_chainId through the load balancer: $ok answered 200; instance 1 served $served1, instance 2 served $served2"
[ "$ok" = 40 ] || exit 1
# Both instances behind the balancer answered, before one is killed.
[ "$served1" -gt 0 ] && [ "$served2" -gt 0 ] || { echo "compose-smoke: FAIL: the balancer did not use both instances" >&2; exit 1; }
# A webhook created through the load balancer, and a transaction to the address it watches
# (sent to anvil from inside the stack: the chain is not published).
watched=0x00000000000000000000000000000000000c0ffe
hook="$(curl -fsS --max-time 20 -H 'content-type: application/json' -H "authorization: Bearer $key" \
  -d "{\"url\":\"https://receiver:8443/hook\",\"chain\":\"ethereum-devnet\",\"event_type\":\"address_activity\",\"config\":{\"addresses\":[\"$watched\"]}}" \
  $lb/v1/webhooks)" || { echo "compose-smoke: FAIL: webhook not created" >&2; exit 1; }
step "webhook created through the load balancer: $(printf '%s' "$hook" | node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const w=JSON.parse(s);console.log(w.id,w.event_type,w.url)})")"
send_tx() {
  podman exec halyard-smoke_halyard-1_1 node -e "fetch('http://anvil:8545',{method:'POST',headers:{'content-type':'application/json'},body:JSON.stringify({jsonrpc:'2.0',id:1,method:'eth_sendTransaction',params:[{from:'0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266',to:'$watched',value:'0x1'}]})}).then(r=>r.json()).then(j=>console.log(j.result??JSON.stringify(j)))"
}
deliveries() { podman logs halyard-smoke_receiver_1 2>/dev/null | grep -c '^delivery ' || true; }
wait_delivery() { # count seconds
  for _ in $(seq 1 "$2"); do [ "$(deliveries)" -ge "$1" ] && return 0; sleep 1; done
  return 1
}
t=$SECONDS
tx="$(send_tx)"
wait_delivery 1 180 || { echo "compose-smoke: FAIL: no delivery for $tx within 180 s" >&2; exit 1; }
step "transaction $tx to the watched address: delivered in $((SECONDS - t)) s: $(podman logs halyard-smoke_receiver_1 2>/dev/null | grep '^delivery ' | tail -n1)"

podman kill halyard-smoke_halyard-2_1 >/dev/null
step "halyard-2 killed ($(podman inspect --format '{{.State.Status}}' halyard-smoke_halyard-2_1))"
failed=0; for _ in $(seq 1 40); do [ "$(rpc)" = 200 ] || failed=$((failed + 1)); done
step "40 more eth_chainId through the load balancer: $((40 - failed)) answered 200, $failed failed; instance 1 served $(count halyard-1) in all"
[ "$failed" = 0 ] || exit 1
t=$SECONDS
before="$(deliveries)"
tx="$(send_tx)"
wait_delivery $((before + 1)) 180 || { echo "compose-smoke: FAIL: no delivery for $tx within 180 s after the kill" >&2; exit 1; }
step "transaction $tx after the kill: delivered in $((SECONDS - t)) s ($(deliveries) deliveries in all)"
webhook_metrics="$(podman exec halyard-smoke_halyard-1_1 node -e "fetch('http://127.0.0.1:8080/metrics').then(r=>r.text()).then(t=>console.log(t.split('\n').filter(l=>/^halyard_webhook_(attempts_total|queue_events|queue_lag_seconds)/.test(l)).join(' ')))")"
step "instance 1's webhook metrics: $webhook_metrics"
targets="$(curl -fsS --max-time 10 "http://127.0.0.1:$PROMETHEUS_PORT/api/v1/targets" | node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const t=JSON.parse(s).data.activeTargets;console.log(t.map(x=>x.labels.instance+'='+x.health).join(' '))})" || echo unavailable)"
step "Prometheus targets: $targets"
step "PASS in $SECONDS s"
