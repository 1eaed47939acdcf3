import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type Browser, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { until } from '../../test/helpers/until.ts'
import { ensureAccountAbstraction } from '../devnet/account-abstraction.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { openStorage, type Storage } from '../storage/database.ts'
import { migrate } from '../storage/migrate.ts'
import { Receiver } from '../webhooks/testdata/receiver.ts'
import { SmtpSink } from '../webhooks/testdata/smtp-sink.ts'

/**
 * Test-only: the dashboard's browser tests on real parts — Debian's Chromium driven by
 * playwright-core, real Halyard on anvil (PGlite), a real SMTP sink for the sign-in e-mails and
 * a real HTTP receiver for webhooks (dev mode allows http:// to loopback). Nothing is faked.
 */
export const CHROMIUM = '/usr/bin/chromium'
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]
/** Where page screenshots go (the README shows them). */
export const SHOTS = path.resolve(import.meta.dirname, '../../docs/screenshots')

/** A describe block that needs Chromium: skipped, with the reason in its title, when it is absent. */
export function describeBrowser(title: string, fn: () => void): void {
  const reason = existsSync(CHROMIUM) ? undefined : `skipped: ${CHROMIUM} not installed`
  describe.skipIf(reason !== undefined)(reason ? `${title} (${reason})` : title, fn)
}

export interface BrowserFixture {
  anvil: AnvilProcess
  storage: Storage
  h: TestHalyard
  smtp: SmtpSink
  receiver: Receiver
  browser: Browser
  /** http://127.0.0.1:port */
  origin: string
  /** Fills the sign-in form for `email` and returns the link from the e-mail that arrives. */
  requestLink(page: Page, email: string): Promise<string>
  /** Signs `email` in on `page` (a fresh account is created by the caller). */
  signIn(page: Page, email: string): Promise<void>
  /** axe-core on the page: the serious and critical violations (an empty list passes). */
  axe(page: Page): Promise<string[]>
  shot(page: Page, name: string): Promise<void>
}

const AXE = readFileSync(path.resolve(import.meta.dirname, '../../node_modules/axe-core/axe.min.js'), 'utf8')

/** Quoted-printable and base64 bodies both happen; the link is found in the decoded text. */
function linkIn(raw: string): string | undefined {
  const qp = raw
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16)))
  const b64 = raw
    .split(/\r?\n\r?\n/)
    .slice(1)
    .map((part) => Buffer.from(part.replace(/\s+/g, ''), 'base64').toString('utf8'))
    .join('\n')
  const m = /https?:\/\/[^\s"<>]+\/dashboard\/sign-in\/link\?token=[A-Za-z0-9_-]+/.exec(`${qp}\n${b64}`)
  return m?.[0]
}

/**
 * `sponsorship`: deploy the ERC-4337 contracts first and start Halyard in dev mode on that data
 * dir, as `npm start` does, so gas sponsorship (and the gas policy pages) are on.
 */
export function browserFixture(opts: { sponsorship?: boolean } = {}): BrowserFixture {
  const fx = {} as BrowserFixture
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true })
    fx.anvil = await startAnvil()
    fx.storage = await openStorage({})
    await migrate(fx.storage.db)
    fx.smtp = await new SmtpSink().start()
    fx.receiver = await new Receiver('127.0.0.1').start()
    const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-dash-'))
    const aa = opts.sponsorship ? await ensureAccountAbstraction(fx.anvil.url, dataDir) : undefined
    fx.h = await startTestHalyard({
      networks: [anvilNetwork(fx.anvil, aa ? { accountAbstraction: aa.config } : {})],
      storage: fx.storage,
      devMode: true,
      env: {
        HALYARD_DATA_DIR: dataDir,
        SMTP_URL: fx.smtp.url,
        HALYARD_WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms,100ms',
      },
    })
    fx.origin = fx.h.halyard.origin
    fx.browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
  })
  afterAll(async () => {
    await fx.browser?.close()
    await fx.h?.close()
    await fx.storage?.close()
    await fx.anvil?.stop()
    await fx.receiver?.stop()
    await fx.smtp?.stop()
  })

  fx.requestLink = async (page, email) => {
    const before = fx.smtp.mails.length
    await page.goto(`${fx.origin}/dashboard/sign-in`)
    await page.getByLabel('E-mail').fill(email)
    await page.getByRole('button', { name: 'E-mail me a sign-in link' }).click()
    await page.getByText('a sign-in link is on its way').waitFor()
    const mail = await until(`sign-in e-mail to ${email}`, () =>
      fx.smtp.mails.slice(before).find((m) => m.to.includes(email)),
    )
    const link = linkIn(mail.raw)
    expect(link, mail.raw).toBeDefined()
    return link as string
  }
  fx.signIn = async (page, email) => {
    const link = await fx.requestLink(page, email)
    await page.goto(link)
    await page.getByRole('button', { name: 'Sign in to Halyard' }).click()
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
  }
  fx.axe = async (page) => {
    await page.evaluate(AXE)
    const found = await page.evaluate(async () => {
      const w = globalThis as unknown as {
        axe: {
          run(): Promise<{
            violations: { id: string; impact: string | null; help: string; nodes: unknown[] }[]
          }>
        }
      }
      const r = await w.axe.run()
      return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, n: v.nodes.length }))
    })
    return found
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.n} nodes)`)
  }
  fx.shot = async (page, name) => {
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true })
  }
  return fx
}
