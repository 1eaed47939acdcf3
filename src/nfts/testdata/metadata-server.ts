import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface MetadataServer {
  /** http://127.0.0.1:PORT */
  url: string
  /** Every path asked for, in order. */
  served: string[]
  /** Documents answered as JSON, by path; tests change them to exercise refresh. */
  docs: Map<string, unknown>
  /** Most /hang/… requests open at the same time so far. */
  hangPeak(): number
  close(): Promise<void>
}

/**
 * A metadata host on loopback for the NFT API tests. Besides `docs` it has fixed misbehaving
 * paths: /slow.json and /hang/… never answer, /big.json is 5 MB, /redirect-private redirects
 * to a private address.
 */
export async function startMetadataServer(): Promise<MetadataServer> {
  const served: string[] = []
  const docs = new Map<string, unknown>()
  let hanging = 0
  let peak = 0
  const server = createServer((req, res) => {
    const url = req.url ?? '/'
    served.push(url)
    if (url === '/slow.json') return
    if (url.startsWith('/hang/')) {
      // Never answers either; counts how many such requests are open at once.
      hanging++
      peak = Math.max(peak, hanging)
      res.on('close', () => hanging--)
      return
    }
    if (url === '/redirect-private')
      return res.writeHead(302, { location: 'http://192.168.7.7/m.json' }).end()
    if (url === '/big.json') {
      res.setHeader('content-type', 'application/json')
      res.end(`{"name":"${'x'.repeat(5 * 1024 * 1024)}"}`)
      return
    }
    const doc = docs.get(url)
    if (doc === undefined) return res.writeHead(404).end()
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify(doc))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    served,
    docs,
    hangPeak: () => peak,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}
