/**
 * The one way the dashboard writes HTML: the `html` tag escapes every interpolated value unless
 * it is already `Html` (the output of another `html` call, or `raw` for markup we built
 * ourselves, e.g. SVG with numbers only). Names, URLs, e-mails and error messages come from
 * users; none reaches a page without passing through here.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
}

/** Text and attribute-safe escaping (quotes included, so values may sit in attributes). */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"'`]/g, (c) => ESCAPES[c] as string)
}

export type HtmlValue = Html | string | number | bigint | boolean | null | undefined | readonly HtmlValue[]

function render(v: HtmlValue): string {
  if (v === null || v === undefined || v === false) return ''
  if (v instanceof Html) return v.value
  if (Array.isArray(v)) return v.map(render).join('')
  return escapeHtml(String(v))
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0] ?? ''
  for (let i = 0; i < values.length; i++) out += render(values[i] as HtmlValue) + (strings[i + 1] ?? '')
  return new Html(out)
}

/** Markup the dashboard itself produced (never user input). */
export function raw(s: string): Html {
  return new Html(s)
}
