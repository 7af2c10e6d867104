import { extendZodWithOpenApi, type ZodOpenAPIMetadata } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// The schemas that validate requests also describe them in the OpenAPI document (api/openapi/):
// every schema module imports `z` from here, so `.openapi()` exists before any of them is built.
extendZodWithOpenApi(z);

export { z };

/**
 * Metadata for `.openapi()` in JSON Schema 2020-12 terms that the library's (OpenAPI 3.0-era)
 * types lack, such as `propertyNames` or `false` subschemas.
 */
export function jsonSchema(metadata: Record<string, unknown>): Partial<ZodOpenAPIMetadata> {
  return metadata as Partial<ZodOpenAPIMetadata>;
}
