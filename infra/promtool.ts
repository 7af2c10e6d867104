import { ensureGoModuleBinary } from './go-module-binary';

/**
 * promtool, Prometheus's own checker of rule files (github.com/prometheus/prometheus, Apache-2.0):
 * `promtool check rules` and `promtool test rules` check deploy/prometheus/rules in the tests.
 * Prometheus's Go module v0.316.0 is Prometheus 3.16.0.
 */
export const PROMTOOL_MODULE = 'github.com/prometheus/prometheus';
export const PROMTOOL_VERSION = 'v0.316.0';

/** The `promtool` binary, built into the cache (`agent-runs/promtool/<version>`) the first time. */
export function ensurePromtool(): Promise<string> {
  return ensureGoModuleBinary({
    title: 'promtool (the Prometheus rule checker)',
    module: PROMTOOL_MODULE,
    version: PROMTOOL_VERSION,
    pkg: './cmd/promtool',
    binary: 'promtool',
    buildTimeoutMs: 2_700_000,
    // Without the service-discovery plugins (cloud SDKs, Kubernetes): a rule checker needs none,
    // and the build takes a fraction of the time (Prometheus's documented `remove_all_sd` tag).
    tags: ['remove_all_sd'],
  });
}
