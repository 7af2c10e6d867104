/** Headers of one HTTP hop (RFC 9110 §7.6.1 and the proxy ones): never passed on by a proxy or the gateway. */
export const HOP_BY_HOP_HEADERS: readonly string[] = [
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];
