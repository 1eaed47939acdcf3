/**
 * The headers by which a data answer states the index behind it (docs/data-apis.md). Named
 * here, beside the other HTTP surfaces, so that CORS exposes exactly these to pages (http/cors.ts)
 * and the index's answers set exactly these (indexer/index-coverage.ts).
 */
export const INDEX_HEADERS = {
  completeFrom: 'Halyard-Index-Complete-From',
  indexedTo: 'Halyard-Index-Indexed-To',
  partial: 'Halyard-Index-Partial',
  scan: 'Halyard-History-Scan',
} as const
