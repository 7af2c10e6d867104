/** Seconds in each unit a duration may be written in. */
const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

/** The longest duration accepted: ten years (a key meant to last longer should not expire). */
export const MAX_DURATION_SECONDS = 3650 * UNIT_SECONDS.d;

/** A duration that is not `<whole number><s|m|h|d>`, or past MAX_DURATION_SECONDS. */
export class DurationError extends Error {}

/**
 * A duration as an operator writes it, in seconds: a whole number and one unit, `s`, `m`, `h` or
 * `d` (`90d`, `12h`, `2s`); `0` alone is zero. Anything else (`1.5h`, `2 days`, `-1d`, `10`) is a
 * DurationError naming `what` and saying what to write.
 */
export function parseDuration(text: string, what: string): number {
  if (text === '0') return 0;
  const match = /^(\d{1,10})([smhd])$/.exec(text);
  if (!match) {
    throw new DurationError(
      `${what} must be a whole number and a unit, s, m, h or d (e.g. 90d, 12h, 30m, 2s); got ${JSON.stringify(text)}.`,
    );
  }
  const seconds = Number(match[1]) * UNIT_SECONDS[match[2] as keyof typeof UNIT_SECONDS];
  if (seconds > MAX_DURATION_SECONDS) {
    throw new DurationError(`${what} may be at most 3650d (ten years); got ${text}.`);
  }
  return seconds;
}
