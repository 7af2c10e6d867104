const levels = { debug: 10, info: 20, warn: 30, error: 40 } as const;
export type LogLevel = keyof typeof levels;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** One JSON line per entry on stderr, so stdout stays free for what a command prints. */
export function createLogger(level: LogLevel, component: string): Logger {
  const min = levels[level];
  const write = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (levels[lvl] < min) return;
    const entry = { time: new Date().toISOString(), level: lvl, component, msg, ...fields };
    process.stderr.write(`${JSON.stringify(entry, errorReplacer)}\n`);
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  };
}

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  return value;
}
