/** A failure of an HTTP/1.1 exchange itself (not a status): `code` names it as Node's socket errors do. */
export class Http1Error extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
    this.name = 'Http1Error'
  }
}
