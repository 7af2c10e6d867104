import { nonBlankText } from './text';
import { z } from './zod';
import { agentConfigSchema } from './run-schemas';

/** `POST`/`PUT /agent/factories` bodies: what a factory made through the API sets. */
export const factoryBodySchema = z.strictObject({
  name: nonBlankText(200),
  description: z.string().max(2000).nullish(),
  environment_id: agentConfigSchema.shape.environment_id.nullable(),
});

export type FactoryBody = z.infer<typeof factoryBodySchema>;

/** `POST /agent/factories/validate`: a FACTORY.md's text, and where it would live (to check its name against it). */
export const factoryValidateBodySchema = z.strictObject({
  content: z.string(),
  path: z.string().min(1).max(1000).optional(),
});
