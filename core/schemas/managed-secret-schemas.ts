import { z } from 'zod';
import { MANAGED_SECRET_KINDS, MANAGED_SECRET_NAME, MANAGED_SECRET_NAME_RULE } from '../managed-secrets';
import { resourcePageInfoSchema } from './resource-page-schemas';

/** Request and response schemas of `/agent/secrets`: values go in, never out. */

export const MAX_SECRET_VALUE_CHARS = 16_384;

export const managedSecretNameSchema = z.string().regex(MANAGED_SECRET_NAME, MANAGED_SECRET_NAME_RULE);

/** `POST /agent/secrets`: creates the secret, or replaces the one of that name. */
export const createManagedSecretSchema = z.strictObject({
  name: managedSecretNameSchema,
  value: z
    .string()
    .min(1)
    .max(MAX_SECRET_VALUE_CHARS)
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces or line breaks (a key or a token)')
    .openapi({ description: 'The secret itself: stored encrypted, never shown again.' }),
  kind: z.enum(MANAGED_SECRET_KINDS).optional().openapi({
    description: "What it is; when left out, read from the value's well-known prefix (`sk-ant-`, `sk-`, `AIza`).",
  }),
  description: z.string().max(500).optional(),
});

export type CreateManagedSecretRequest = z.infer<typeof createManagedSecretSchema>;

export const managedSecretItemSchema = z
  .object({
    name: z.string(),
    kind: z.enum(MANAGED_SECRET_KINDS),
    description: z.string().nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .openapi('ManagedSecret');

export const managedSecretListSchema = z.object({
  secrets: z.array(managedSecretItemSchema),
  page_info: resourcePageInfoSchema,
});
