import { ensureGoModuleBinary } from './go-module-binary';

/**
 * Helm (helm.sh, Apache-2.0), with which CI lints and renders the chart in deploy/helm/agent-runs
 * (test/unit/helm-chart.test.ts). One Go binary, built from the Go module proxy's copy of this
 * version once per machine; no cluster is needed for `helm lint` and `helm template`.
 */
export const HELM_MODULE = 'helm.sh/helm/v4';
export const HELM_VERSION = 'v4.3.2';

/** The `helm` binary, built into the cache (`agent-runs/helm/<version>`) the first time. */
export function ensureHelm(): Promise<string> {
  return ensureGoModuleBinary({
    title: 'Helm (the chart checks of the tests)',
    module: HELM_MODULE,
    version: HELM_VERSION,
    pkg: './cmd/helm',
    binary: 'helm',
    // As helm's own Makefile does: `helm version` says the release it is.
    ldflags: [`helm.sh/helm/v4/internal/version.version=${HELM_VERSION}`],
    // Kubernetes' client libraries and the rest: past 15 minutes on two busy cores with an empty Go cache.
    buildTimeoutMs: 1_800_000,
  });
}
