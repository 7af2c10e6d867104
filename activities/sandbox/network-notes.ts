import type { NetworkRefusal } from './egress-proxy';

/** What the model and the transcript are told about connections the sandbox refused. */
export function networkRefusalNotes(refusals: NetworkRefusal[]): string {
  if (!refusals.length) return '';
  const lines = refusals.map((r) => `[sandbox network] refused ${r.host}:${r.port}: ${r.reason}`);
  return `\n${lines.join('\n')}`;
}
