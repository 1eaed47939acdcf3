import { toHex } from 'viem'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { Receiver } from '../../test/fixtures/webhooks/receiver.ts'
import { SmtpSink } from '../../test/fixtures/webhooks/smtp-sink.ts'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { describeEachStorage, type TestStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { claimMail, enqueueMail, markMailFailed } from '../mail/outbox.ts'
import type { Address, Hash } from '../types.ts'

/**
 * The pause e-mail survives an SMTP outage: it is written to mail_outbox in the transaction
 * that pauses the webhook, and the outbox sender retries it with backoff until the (real)
 * SMTP sink is back, then sends it once. Real anvil, real receiver, real SMTP server.
 */
const F = '0x00000000000000000000000000000000000000f1' as Address

describeEachStorage('mail outbox on $name', (backend) => {
  let anvil: AnvilProcess
  let storage: TestStorage
  let h: TestHalyard
  let dev: Devnet
  let key: string
  let receiver: Receiver
  let smtp: SmtpSink | undefined
  let smtpPort = 0
  const OWNER = `outbox-${backend.name}@test.local`

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await backend.open()
    dev = new Devnet(anvil.url)
    receiver = await new Receiver('127.0.0.1').start()
    // Take a free port for the sink, then close it: SMTP is down when the pause happens.
    const probe = await new SmtpSink().start()
    smtpPort = probe.port
    await probe.stop()
    h = await startTestHalyard({
      networks: [anvilNetwork(anvil)],
      storage,
      devMode: true,
      env: { SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, HALYARD_WEBHOOK_RETRY_SCHEDULE: '100ms' },
    })
    key = await h.createKey({ email: OWNER })
  })
  afterAll(async () => {
    await h?.close().catch(() => {})
    await storage?.close()
    await receiver?.stop()
    await smtp?.stop()
    await anvil?.stop()
  })

  const outbox = () =>
    storage.db.selectFrom('mail_outbox').select(['to_address', 'sent_at', 'error', 'attempts']).execute()

  it('sends the pause e-mail once after the SMTP server comes back', async () => {
    receiver.mode('down', 'fail')
    const res = await fetch(`${h.baseUrl}/webhooks`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({
        url: `http://127.0.0.1:${receiver.port}/wh/down`,
        chain: 'ethereum-devnet',
        event_type: 'address_activity',
        config: { addresses: [F] },
      }),
    })
    expect(res.status).toBe(201)
    const wh = (await res.json()) as { id: string }
    const hash = await dev.rpc<Hash>('eth_sendTransaction', [{ from: DEV_ACCOUNT, to: F, value: toHex(1n) }])
    await dev.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })

    const paused = async () => {
      const row = await storage.db
        .selectFrom('webhooks')
        .select('status')
        .where('id', '=', wh.id)
        .executeTakeFirst()
      return row?.status === 'paused'
    }
    await until('paused', paused)
    // The notice is in the outbox with the pause (same transaction), and its first send failed.
    await until('a failed send', async () => (await outbox()).some((r) => r.error !== null))
    let rows = await outbox()
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ to_address: OWNER, sent_at: null })
    expect(rows[0]?.error).toMatch(/ECONNREFUSED|connect/i)

    smtp = await new SmtpSink().start(smtpPort)
    await until('the e-mail', () => (smtp?.mails.length ?? 0) >= 1)
    await until('marked sent', async () => (await outbox())[0]?.sent_at != null)
    rows = await outbox()
    expect(rows).toHaveLength(1)
    expect(rows[0]?.attempts).toBeGreaterThanOrEqual(2)
    // A further sender pass (it polls every 2 s) must not send it again.
    await new Promise((r) => setTimeout(r, 2500))
    expect(smtp.mails).toHaveLength(1)
    expect(smtp.mails[0]?.to).toEqual([OWNER])
    expect(smtp.mails[0]?.raw).toContain(wh.id)
  })

  it('never gives the same outbox row to two concurrent claims', async () => {
    // Halyard's own sender would take these rows too: stop it first.
    await h.close()
    const db = storage.db
    await db.deleteFrom('mail_outbox').execute()
    for (let i = 0; i < 30; i++) await enqueueMail(db, { to: `c${i}@test.local`, subject: 's', text: 't' })
    const [x, y] = await Promise.all([claimMail(db, 20, 60_000), claimMail(db, 20, 60_000)])
    const ids = [...x, ...y].map((r) => r.id)
    expect(ids).toHaveLength(30)
    expect(new Set(ids).size).toBe(30)
    // Leased: nothing is claimable until the lease ends or a failure schedules a retry.
    expect(await claimMail(db, 20, 60_000)).toHaveLength(0)
    await markMailFailed(db, x[0]?.id as string, 'boom', new Date(Date.now() - 1000))
    expect((await claimMail(db, 20, 60_000)).map((r) => r.id)).toEqual([x[0]?.id])
  })
})
