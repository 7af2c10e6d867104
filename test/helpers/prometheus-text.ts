/** One sample of a Prometheus text exposition: `name{label="value",…} value`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Metric families by name: their TYPE and samples. */
export interface Exposition {
  types: Map<string, string>;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;

/**
 * Parses the Prometheus text format (version 0.0.4): comments, TYPE lines and samples with
 * escaped label values. Throws on a line it cannot read, so malformed output fails the test.
 */
export function parsePrometheusText(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
      if (type) types.set(type[1]!, type[2]!);
      continue;
    }
    const name = NAME.exec(line)?.[0];
    if (!name) throw new Error(`line ${index + 1}: no metric name: ${line}`);
    let at = name.length;
    const labels: Record<string, string> = {};
    if (line[at] === '{') {
      at += 1;
      while (line[at] !== '}') {
        const label = /^([a-zA-Z_][a-zA-Z0-9_]*)="/.exec(line.slice(at));
        if (!label) throw new Error(`line ${index + 1}: bad label at ${at}: ${line}`);
        at += label[0].length;
        let value = '';
        while (line[at] !== '"') {
          if (at >= line.length) throw new Error(`line ${index + 1}: unterminated label value: ${line}`);
          if (line[at] === '\\') {
            const next = line[at + 1];
            value += next === 'n' ? '\n' : next;
            at += 2;
          } else {
            value += line[at];
            at += 1;
          }
        }
        labels[label[1]!] = value;
        at += 1;
        if (line[at] === ',') at += 1;
      }
      at += 1;
    }
    const value = parseValue(line.slice(at).trim().split(/\s+/)[0] ?? '');
    if (value === undefined) throw new Error(`line ${index + 1}: bad value: ${line}`);
    samples.push({ name, labels, value });
  }
  return { types, samples };
}

/** A sample value as Go's ParseFloat reads it (Prometheus's own parser): NaN and Inf in any case. */
function parseValue(text: string): number | undefined {
  const lower = text.toLowerCase();
  if (lower === 'nan') return NaN;
  if (/^[+-]?inf(inity)?$/.test(lower)) return lower.startsWith('-') ? -Infinity : Infinity;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(lower)) return undefined;
  return Number(text);
}

/** The sum of the samples named `name` whose labels include `labels` (0 when there are none). */
export function sampleValue(exposition: Exposition, name: string, labels: Record<string, string> = {}): number {
  return exposition.samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}
