import { assertMetricsGuarded, isLoopbackHost } from '../../core/metrics';

test.each(['127.0.0.1', '127.10.0.3', 'localhost', 'LocalHost', '::1', '[::1]', '::ffff:127.0.0.1'])(
  '%s is loopback only',
  (host) => expect(isLoopbackHost(host)).toBe(true),
);

test.each(['0.0.0.0', '::', '[::]', '10.0.0.5', '192.168.1.2', '128.0.0.1', 'api.internal', '::ffff:10.0.0.1'])(
  '%s is not loopback only',
  (host) => expect(isLoopbackHost(host)).toBe(false),
);

test('a metrics server off loopback needs METRICS_BEARER_TOKEN; on loopback, or with the token, it may start', () => {
  expect(() => assertMetricsGuarded('the API', '0.0.0.0', undefined)).toThrow(
    /METRICS_BEARER_TOKEN: required when the API listens on HOST=0\.0\.0\.0, not on loopback only/,
  );
  expect(() => assertMetricsGuarded('the API', '0.0.0.0', 'token')).not.toThrow();
  expect(() => assertMetricsGuarded('the API', '127.0.0.1', undefined)).not.toThrow();
});
