import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'

/** A real SMTP server for tests (the `smtp-server` package): keeps every message it receives. */
export class SmtpSink {
  readonly mails: Array<{ to: string[]; raw: string }> = []
  port = 0
  private readonly server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData: (stream, session, cb) => {
      let raw = ''
      stream.on('data', (d: Buffer) => {
        raw += d.toString()
      })
      stream.on('end', () => {
        this.mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw })
        cb()
      })
    },
  })

  /** Listens on `port` (0: a free one); a test brings a sink back up on the port it had. */
  async start(port = 0): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', () => resolve()))
    this.port = (this.server.server.address() as AddressInfo).port
    return this
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`
  }

  stop(): Promise<void> {
    return new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
