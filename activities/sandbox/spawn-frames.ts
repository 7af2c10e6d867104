/** The spawn server's frames: a 9-byte header (payload length, process id, type) and a payload. */

/** Frame types (the same list is in sandbox-init/spawner.go). */
export const FRAME = {
  start: 1,
  stdin: 2,
  stdinEnd: 3,
  signal: 4,
  pause: 5,
  resume: 6,
  started: 11,
  failed: 12,
  stdout: 13,
  stderr: 14,
  exit: 15,
  stdoutEnd: 16,
  stderrEnd: 17,
  stdinAck: 18,
} as const;

export const HEADER = 9;
/** Standard input goes over in chunks of at most this much, each acknowledged before the next. */
export const STDIN_CHUNK = 256 * 1024;
/** The largest frame a server sends (an output chunk is at most 64 KiB); anything larger ends it. */
export const MAX_SERVER_FRAME = 1024 * 1024;
