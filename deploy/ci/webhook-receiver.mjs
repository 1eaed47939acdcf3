// The compose smoke run's webhook receiver (deploy/compose.ci.yaml): HTTPS on the stack's network
// with a certificate the smoke script makes and the instances trust (HALYARD_WEBHOOK_CA_FILE),
// since a production instance delivers only over https. One line per delivery on stdout.
import { readFileSync } from 'node:fs'
import { createServer } from 'node:https'

const dir = '/etc/smoke-tls'
const tls = { key: readFileSync(`${dir}/receiver.key`), cert: readFileSync(`${dir}/receiver.crt`) }
createServer(tls, (req, res) => {
  const chunks = []
  req.on('data', (c) => chunks.push(c))
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8')
    let type = '?'
    try {
      const parsed = JSON.parse(body)
      type = parsed.type ?? parsed.event_type ?? parsed.event?.type ?? '?'
    } catch {}
    console.log(`delivery ${req.method} ${req.url} type=${type} bytes=${body.length}`)
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
  })
}).listen(8443, '0.0.0.0', () => console.log('receiver listening on 8443'))
