import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

/**
 * A throwaway self-signed certificate for `localhost` / 127.0.0.1 / ::1, made with the real
 * `openssl` binary. Tests serve HTTPS with it and pass `cert` as the `ca` their client trusts.
 */
export function selfSignedCert(): { key: string; cert: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'halyard-cert-'))
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
        '-days',
        '2',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,DNS:receiver.test,IP:127.0.0.1,IP:::1',
      ],
      { stdio: 'ignore' },
    )
    return {
      key: readFileSync(path.join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8'),
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
