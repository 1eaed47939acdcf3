import { type Html, html } from './html.ts'

export interface Bar {
  readonly label: string
  readonly value: number
}

const fmt = (n: number) => n.toLocaleString('en-US')

/**
 * A bar chart as inline SVG, rendered on the server: no script, no library, readable at a
 * glance. Screen readers get the title and a summary (role="img" + aria-label); the numbers
 * are also in a table under "Show data".
 */
export function barChart(o: { id: string; title: string; bars: readonly Bar[]; unit: string }): Html {
  const w = 720
  const h = 160
  const pad = { l: 48, r: 8, t: 10, b: 24 }
  const max = Math.max(1, ...o.bars.map((b) => b.value))
  const n = Math.max(1, o.bars.length)
  const slot = (w - pad.l - pad.r) / n
  const barW = Math.max(1, slot * 0.75)
  const total = o.bars.reduce((a, b) => a + b.value, 0)
  const summary = `${o.title}: ${fmt(total)} ${o.unit} in total, at most ${fmt(max)} in one bar`
  const y = (v: number) => pad.t + (h - pad.t - pad.b) * (1 - v / max)
  return html`<figure>
<figcaption><strong>${o.title}</strong></figcaption>
<svg class="chart" id="${o.id}" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" role="img" aria-label="${summary}">
<line x1="${pad.l}" y1="${h - pad.b}" x2="${w - pad.r}" y2="${h - pad.b}" stroke="#57606a"/>
<text x="${pad.l - 6}" y="${pad.t + 8}" font-size="11" text-anchor="end" fill="#1b1f24">${fmt(max)}</text>
<text x="${pad.l - 6}" y="${h - pad.b}" font-size="11" text-anchor="end" fill="#1b1f24">0</text>
${o.bars.map((b, i) => {
  const x = pad.l + i * slot + (slot - barW) / 2
  const top = y(b.value)
  return html`<rect x="${x.toFixed(1)}" y="${top.toFixed(1)}" width="${barW.toFixed(1)}" height="${(h - pad.b - top).toFixed(1)}" fill="#0a58ca"><title>${b.label}: ${fmt(b.value)} ${o.unit}</title></rect>`
})}
${
  o.bars.length > 0
    ? html`<text x="${pad.l}" y="${h - 6}" font-size="11" fill="#1b1f24">${o.bars[0]?.label}</text><text x="${w - pad.r}" y="${h - 6}" font-size="11" text-anchor="end" fill="#1b1f24">${o.bars[o.bars.length - 1]?.label}</text>`
    : ''
}
</svg>
<details><summary>Show data</summary><table><thead><tr><th scope="col">${o.unit === 'requests' || o.unit === 'compute units' || o.unit === '429s' ? 'Day' : 'Item'}</th><th scope="col">${o.unit}</th></tr></thead><tbody>
${o.bars.map((b) => html`<tr><td>${b.label}</td><td>${fmt(b.value)}</td></tr>`)}
</tbody></table></details>
</figure>`
}

/** Text width at `size` px in the chart's sans-serif, generously (so a label is never clipped). */
const textWidth = (s: string, size: number) => Math.ceil(s.length * size * 0.62) + 8

/**
 * Horizontal bars with their labels (per-method use), and the same numbers in a table beside
 * the chart. The label column and the value column are as wide as their longest text, so a
 * long method name (alchemy_getAssetTransfers) or a large number is never cut off.
 */
export function labelledBars(o: { title: string; bars: readonly Bar[]; unit: string; item?: string }): Html {
  if (o.bars.length === 0) return html`<p><strong>${o.title}</strong>: nothing in this range.</p>`
  const max = Math.max(1, ...o.bars.map((b) => b.value))
  const rowH = 22
  const size = 12
  const labelW = Math.max(...o.bars.map((b) => textWidth(b.label, size)))
  const valueW = Math.max(...o.bars.map((b) => textWidth(`${fmt(b.value)} ${o.unit}`, size)))
  const barArea = 320
  const w = labelW + barArea + valueW
  const h = o.bars.length * rowH + 4
  return html`<figure>
<figcaption><strong>${o.title}</strong></figcaption>
<div class="chart-pair">
<svg class="chart" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" role="img" aria-label="${o.title}: ${o.bars
    .map((b) => `${b.label} ${fmt(b.value)}`)
    .join(', ')}">
${o.bars.map((b, i) => {
  const len = (barArea * b.value) / max
  const yy = i * rowH + 2
  return html`<g><title>${b.label}: ${fmt(b.value)} ${o.unit}</title><text x="${labelW - 6}" y="${yy + 15}" font-size="${size}" text-anchor="end" fill="#1b1f24">${b.label}</text><rect x="${labelW}" y="${yy + 3}" width="${Math.max(1, len).toFixed(1)}" height="${rowH - 6}" fill="#0a58ca"/><text x="${(labelW + len + 6).toFixed(1)}" y="${yy + 15}" font-size="${size}" fill="#1b1f24">${fmt(b.value)} ${o.unit}</text></g>`
})}
</svg>
<table><thead><tr><th scope="col">${o.item ?? 'Item'}</th><th scope="col">${o.unit}</th></tr></thead><tbody>
${o.bars.map((b) => html`<tr><td>${b.label}</td><td class="num">${fmt(b.value)}</td></tr>`)}
</tbody></table>
</div>
</figure>`
}
