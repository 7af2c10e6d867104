/** Bytes as `12.3 MiB`, for messages. */
export function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** Milliseconds as `1.2 s`, for messages. */
export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
