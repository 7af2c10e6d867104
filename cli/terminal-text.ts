/**
 * Text that came from a model, a command or a repository is shown as text, never obeyed by the
 * terminal: control characters (escape sequences that could move the cursor, rewrite the
 * title or hide lines) and bidirectional overrides are made visible instead.
 */
export function terminalSafe(text: string): string {
  let out = '';
  for (const ch of text.replace(/\r\n/g, '\n')) {
    const code = ch.codePointAt(0)!;
    if (ch === '\n' || ch === '\t') out += ch;
    else if (ch === '\r') out += '\n';
    else if (code < 0x20) out += `^${String.fromCharCode(code + 64)}`;
    else if (code === 0x7f) out += '^?';
    else if ((code >= 0x80 && code < 0xa0) || (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069))
      out += `\\u{${code.toString(16)}}`;
    else out += ch;
  }
  return out;
}

/**
 * Untrusted text in a heading line of the CLI's own (a command after `$`, a status message):
 * its further lines are indented, so that none of them can pass for a line of the CLI's.
 */
export function headingText(text: string): string {
  return terminalSafe(text).replace(/\n+$/, '').replace(/\n/g, '\n    ');
}

/** The first `max` characters of one line of `text`, for a table cell or a heading. */
export function oneLine(text: string, max: number): string {
  const line = terminalSafe(text).replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export type Style = 'bold' | 'dim' | 'red' | 'green' | 'yellow' | 'blue' | 'magenta' | 'cyan';

const CODES: Record<Style, [number, number]> = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  blue: [34, 39],
  magenta: [35, 39],
  cyan: [36, 39],
};

/** Styles text with ANSI codes when colour is on; returns it unchanged otherwise. */
export function styler(color: boolean): (style: Style, text: string) => string {
  return (style, text) => (color && text ? `\x1b[${CODES[style][0]}m${text}\x1b[${CODES[style][1]}m` : text);
}
