import { invalid } from '../../core/api-error';
import {
  IMAGE_REFERENCE_RULE,
  isRegistryAllowed,
  parseImageReference,
  type ImageReference,
} from '../../core/image-reference';

/**
 * Refuses (400) an environment's `docker_image` that is no image reference, or that comes from a
 * registry IMAGE_ALLOWED_REGISTRIES does not list (empty: every registry). Returns the image as
 * the service reads it (Docker Hub named, official images under `library/`).
 */
export function assertImageAllowed(allowedRegistries: readonly string[], text: string, field: string): ImageReference {
  const parsed = parseImageReference(text);
  if (!parsed.ok) throw invalid(`\`${field}\` ${parsed.problem}; write it as ${IMAGE_REFERENCE_RULE}.`);
  const { registry } = parsed.image;
  if (!isRegistryAllowed(registry, allowedRegistries)) {
    throw invalid(
      `\`${field}\` comes from the registry ${registry}, which this service's IMAGE_ALLOWED_REGISTRIES (${allowedRegistries.join(', ')}) does not list; use an image of one of those registries, or ask the operator to add it.`,
    );
  }
  return parsed.image;
}
