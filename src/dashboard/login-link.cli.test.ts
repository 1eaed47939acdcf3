import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { runCli, spawnHalyard } from '../../test/helpers/cli.ts'

/** Signs in with a link as a browser would: POST the token from our own origin; the session cookie comes back. */
async function signInWith(link: string): Promise<Response> {
  const u = new URL(link)
  return fetch(`${u.origin}/dashboard/sign-in/link`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: u.origin },
    body: new URLSearchParams({ token: u.searchParams.get('token') ?? '' }).toString(),
    redirect: 'manual',
  })
}

describe('dashboard sign-in links from `halyard dev` and `halyard accounts login-link`', () => {
  it('the dev banner prints a working link; the CLI makes links through the running server and offline', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-link-'))
    const env = { HALYARD_DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '' }
    const server = spawnHalyard(['dev'], env)
    try {
      const [, banner] = await server.waitFor(/Dashboard:\s+(\S+)/)
      const signedIn = await signInWith(banner as string)
      expect(signedIn.status).toBe(303)
      expect(signedIn.headers.get('set-cookie')).toMatch(
        /^halyard_session=[A-Za-z0-9_-]+; Path=\/dashboard; HttpOnly; SameSite=Strict/,
      )
      expect((await signInWith(banner as string)).status).toBe(400) // single use

      // While the server holds the PGlite data dir, the CLI goes through its admin API.
      const run = await runCli(['accounts', 'login-link', '--account', 'dev@halyard.local'], env)
      expect(run.code, run.stderr).toBe(0)
      const link = run.stdout.trim().split('\n').at(-1) ?? ''
      expect(new URL(link).origin).toBe(new URL(banner as string).origin)
      expect((await signInWith(link)).status).toBe(303)

      const unknown = await runCli(['accounts', 'login-link', '--account', 'nobody@test.local'], env)
      expect(unknown.code).toBe(1)
      expect(unknown.stderr).toMatch(/no account with e-mail nobody@test\.local/)
    } finally {
      await server.stop('SIGINT')
    }
    // No server: the CLI opens the data dir itself; --base-url says where the dashboard is.
    const offline = await runCli(
      [
        'accounts',
        'login-link',
        '--account',
        'dev@halyard.local',
        '--base-url',
        'https://halyard.example.com/ignored/path',
      ],
      env,
    )
    expect(offline.code, offline.stderr).toBe(0)
    expect(offline.stdout.trim().split('\n').at(-1)).toMatch(
      /^https:\/\/halyard\.example\.com\/dashboard\/sign-in\/link\?token=[A-Za-z0-9_-]{43}$/,
    )
    const bad = await runCli(
      ['accounts', 'login-link', '--account', 'dev@halyard.local', '--base-url', 'ftp://x'],
      env,
    )
    expect(bad.stderr).toMatch(/base_url: must be an http:\/\/ or https:\/\/ URL/)
  }, 240_000)
})
