/** A command line an operator's command refuses (exit 2); its message says what to write. */
export class UsageError extends Error {}
