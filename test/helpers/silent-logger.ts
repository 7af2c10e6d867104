/** A logger for Temporal's SDK (workflow bundling, mock activity environments) that says nothing. */
export const SILENT_LOGGER = {
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  log: () => undefined,
};
