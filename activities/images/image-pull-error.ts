/** Why an image could not be had; each is the run's failure as `image_<kind>` in its message. */
export type ImagePullProblem = 'not_found' | 'pull_unauthorized' | 'too_large' | 'unsupported' | 'registry_not_allowed';

/**
 * A failure that the same pull would meet again (an unknown image, a refused credential, an image
 * over the cache's cap, no image for this platform). Anything else (a registry down, a timeout) is
 * a plain error: the pull is tried again.
 */
export class ImagePullError extends Error {
  override name = 'ImagePullError';
  constructor(
    readonly problem: ImagePullProblem,
    message: string,
  ) {
    super(message);
  }

  get code(): `image_${ImagePullProblem}` {
    return `image_${this.problem}`;
  }
}

/** Reads skopeo's error output: what a retry would not change, or undefined for a transient failure. */
export function classifySkopeoError(stderr: string): ImagePullProblem | undefined {
  if (
    /unauthorized|authentication required|invalid username\/password|status 401|\b403\b.*forbidden|denied:/i.test(
      stderr,
    )
  )
    return 'pull_unauthorized';
  if (/manifest unknown|name unknown|not found|does not exist|reading manifest .* 404/i.test(stderr))
    return 'not_found';
  if (
    /no image found in (image index|manifest list) for architecture|unsupported (manifest|media) ?type|choosing an image from manifest list/i.test(
      stderr,
    )
  )
    return 'unsupported';
  return undefined;
}
