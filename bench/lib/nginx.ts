/**
 * nginx as a reverse proxy in front of anvil (bench/rpc.ts's "nginx → anvil" rows): the
 * reference a gateway's uncached throughput is compared with. Loopback only; its files live in
 * a temporary directory removed at stop.
 */
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { waitForRpc } from '../../src/devnet/anvil.ts'

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

export function findNginx(): string | undefined {
  for (const p of ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx']) {
    try {
      execFileSync(p, ['-v'], { stdio: 'ignore' })
      return p
    } catch {}
  }
  return undefined
}

export async function startNginx(
  bin: string,
  anvilPort: number,
  workers = 1,
): Promise<{ url: string; pid: number | undefined; stop(): Promise<void> }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'halyard-bench-nginx-'))
  const port = await freePort()
  const conf = path.join(dir, 'nginx.conf')
  writeFileSync(
    conf,
    `worker_processes ${workers};
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream anvil { server 127.0.0.1:${anvilPort}; keepalive 128; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://anvil;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`,
  )
  const child = spawn(bin, ['-p', dir, '-c', conf], { stdio: 'ignore' })
  const url = `http://127.0.0.1:${port}`
  await waitForRpc(url, 10_000)
  return {
    url,
    pid: child.pid,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3_000))])
      if (child.exitCode === null) child.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
