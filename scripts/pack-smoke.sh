#!/usr/bin/env bash
# The npm package as a user gets it: `npm pack`, install the tarball into an empty folder, then
# `import 'halyard/webhooks'`, `npx halyard --version`, `halyard dev` (health, eth_chainId with the printed key) and
# `halyard serve --config FILE` (against the installed package's own anvil; a key made by the
# installed CLI; health, eth_chainId), each stopped with SIGTERM. Nothing from this checkout but
# the tarball is used. Prints the tarball's size and file count.
#   scripts/pack-smoke.sh                      # with the node on PATH
#   HALYARD_SMOKE_NODE=/path/to/bin/node scripts/pack-smoke.sh   # under another Node (its dir goes first on PATH)
#   HALYARD_SMOKE_TARBALL=/path/halyard-x.y.z.tgz scripts/pack-smoke.sh   # an existing tarball
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
if [ -n "${HALYARD_SMOKE_NODE:-}" ]; then export PATH="$(dirname "$HALYARD_SMOKE_NODE"):$PATH"; fi
work="$(mktemp -d "${TMPDIR:-/tmp}/halyard-pack-smoke.XXXXXX")"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "pack-smoke: FAIL: $*" >&2; for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }; done; exit 1; }
step() { printf 'pack-smoke [%3ss] %s\n' "$SECONDS" "$*"; }
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
# Waits for a regex in a log file (the process must stay alive meanwhile).
wait_for() { # pid file regex seconds
  for _ in $(seq 1 $(($4 * 5))); do
    grep -qsE "$3" "$2" && return 0
    kill -0 "$1" 2>/dev/null || fail "process $1 exited before /$3/"
    sleep 0.2
  done
  fail "no /$3/ in $2 after $4 s"
}
rpc() { # url key -> result of eth_chainId
  curl -sS --max-time 10 -H 'content-type: application/json' -H "authorization: Bearer $2" \
    -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' "$1"
}
stop() { # pid name: SIGTERM, wait up to 20 s, report the seconds and the exit code
  local t0=$SECONDS code=0
  kill -TERM "$1"
  for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.2; done
  kill -0 "$1" 2>/dev/null && fail "$2 still running 20 s after SIGTERM"
  wait "$1" || code=$?
  step "$2 stopped $((SECONDS - t0)) s after SIGTERM, exit $code"
  [ "$code" -eq 0 ] || fail "$2 exited $code after SIGTERM"
}

step "node $(node --version), npm $(npm --version)"
if [ -n "${HALYARD_SMOKE_TARBALL:-}" ]; then
  tgz="$HALYARD_SMOKE_TARBALL"
else
  (cd "$repo" && npm pack --silent --pack-destination "$work" >/dev/null)
  tgz="$(ls "$work"/halyard-*.tgz)"
fi
version="$(tar -xzOf "$tgz" package/package.json | node -e "console.log(JSON.parse(require('fs').readFileSync(0)).version)")"
files="$(tar -tzf "$tgz" | wc -l)"
step "tarball $(basename "$tgz"): $(du -k "$tgz" | cut -f1) kB, $files files"
if tar -tzf "$tgz" | grep -E '\.test\.ts$|^package/(test|bench|scripts)/'; then fail "tests, benches or scripts in the tarball"; fi

app="$work/app"
mkdir -p "$app"
cd "$app"
echo '{"name":"halyard-pack-smoke","private":true}' >package.json
step "npm i $(basename "$tgz") into an empty folder"
npm i --no-audit --no-fund --loglevel=error "$tgz" >"$work/install.log" 2>&1 || fail "npm i failed"
step "installed: $(find node_modules -maxdepth 2 -name package.json | wc -l) packages, $(du -sm node_modules | cut -f1) MB"
for dev in vitest @biomejs/biome typescript ethers alchemy-sdk permissionless; do
  [ -e "node_modules/$dev" ] && fail "test-only package $dev was installed"
done

# The public entry halyard/webhooks: built JavaScript (prepack) with types, verifying a form A
# delivery signed here with node:crypto, and refusing it changed.
[ -f node_modules/halyard/dist/webhooks/verify.d.ts ] || fail "no dist/webhooks/verify.d.ts in the package"
verified="$(node --input-type=module -e "
import { createHmac } from 'node:crypto'
import { verifyWebhook } from 'halyard/webhooks'
const body = '{\"id\":\"evt_1\"}', ts = String(Math.floor(Date.now() / 1000))
const headers = { 'x-service-timestamp': ts, 'x-service-signature': createHmac('sha256', 's').update(ts + '.' + body).digest('hex') }
console.log(verifyWebhook(body, headers, 's').ok, verifyWebhook(body + ' ', headers, 's').ok)")" || fail "import halyard/webhooks"
[ "$verified" = "true false" ] || fail "halyard/webhooks verified '$verified'"
step "import 'halyard/webhooks': verifies a signed delivery, refuses it changed"

got="$(npx --no-install halyard --version)"
[ "$got" = "$version" ] || fail "halyard --version printed '$got', package is $version"
step "npx halyard --version: $got"
npx --no-install halyard serve --help | grep -q 'usage: halyard serve' || fail "serve --help"

# The servers run from the package's bin directly: npx would stand between the signal and them.
# --- halyard dev ------------------------------------------------------------------------------
export HALYARD_LOG_LEVEL=warn HALYARD_CACHE_DIR="$work/cache"
unset DATABASE_URL REDIS_URL HALYARD_CONFIG HALYARD_SECRET_KEY HALYARD_PUBLIC_URL || true
port="$(free_port)"
HALYARD_DATA_DIR="$work/dev-data" HALYARD_PORT="$port" ./node_modules/.bin/halyard dev >"$work/dev.log" 2>&1 &
pids+=($!)
dev_pid=$!
wait_for "$dev_pid" "$work/dev.log" 'API key:' 180
key="$(sed -nE 's/.*API key:[[:space:]]+(\S+).*/\1/p' "$work/dev.log" | head -n1)"
base="http://127.0.0.1:$port"
curl -fsS --max-time 10 "$base/health" >/dev/null || fail "dev /health"
answer="$(rpc "$base/v1/rpc/ethereum/devnet" "$key")"
step "halyard dev: /health ok, eth_chainId -> $answer"
[[ "$answer" == *'"result":"0x7a69"'* ]] || fail "dev eth_chainId answered $answer"
stop "$dev_pid" "halyard dev"

# --- halyard serve --config --------------------------------------------------------------------
anvil="$(node -e "const p=require.resolve('@foundry-rs/anvil-linux-'+(process.arch==='x64'?'amd64':process.arch)+'/package.json',{paths:[require.resolve('halyard/package.json')]});console.log(require('path').join(require('path').dirname(p),'bin','anvil'))")"
anvil_port="$(free_port)"
"$anvil" --host 127.0.0.1 --port "$anvil_port" --silent >"$work/anvil.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do curl -fs -o /dev/null -H 'content-type: application/json' \
  -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}' "http://127.0.0.1:$anvil_port" && break; sleep 0.2; done
cat >"$work/halyard.yaml" <<YAML
networks:
  - chain: ethereum
    network: devnet
    kind: evm
    chainId: 31337
    blockTimeMs: 1000
    upstreams:
      - url: http://127.0.0.1:$anvil_port
YAML
port="$(free_port)"
export HALYARD_DATA_DIR="$work/serve-data" HALYARD_PORT="$port"
HALYARD_SECRET_KEY="$(node -e "console.log(require('crypto').randomBytes(32).toString('hex'))")" \
  HALYARD_PUBLIC_URL="http://127.0.0.1:$port" \
  ./node_modules/.bin/halyard serve --config "$work/halyard.yaml" >"$work/serve.log" 2>&1 &
pids+=($!)
serve_pid=$!
wait_for "$serve_pid" "$work/serve.log" 'Halyard serving' 120
base="http://127.0.0.1:$port"
curl -fsS --max-time 10 "$base/health" >/dev/null || fail "serve /health"
npx --no-install halyard accounts create --email smoke@example.com >"$work/cli.log" 2>&1 || fail "accounts create"
npx --no-install halyard keys create --account smoke@example.com --env test >>"$work/cli.log" 2>&1 || fail "keys create"
key="$(tail -n1 "$work/cli.log")"
answer="$(rpc "$base/v1/rpc/ethereum/devnet" "$key")"
step "halyard serve --config: /health ok, eth_chainId -> $answer"
[[ "$answer" == *'"result":"0x7a69"'* ]] || fail "serve eth_chainId answered $answer"
stop "$serve_pid" "halyard serve"
step "PASS (node $(node --version), halyard $version)"
