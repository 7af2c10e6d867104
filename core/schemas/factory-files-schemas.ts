import { z } from './zod';

/** Files one validation may send: a factory.yaml and its at most 20 agents, and room for strays to be named. */
export const MAX_TREE_FILES = 50;
/** Content of one file as the client types it (the body's cap is lower, and the format's own, 256 KiB, lower still). */
export const MAX_TREE_FILE_CHARS = 2 * 1024 * 1024;
/** A `POST /factory-files/validate` body: it needs no key, so no more than the API's 1 MiB (parsing it costs ~1 s of CPU at worst). */
export const MAX_TREE_BODY_BYTES = 1024 * 1024;

/** `POST /factory-files/validate` (core/factory-tree/validate-tree.ts). */
export const factoryTreeValidateBodySchema = z.strictObject({
  files: z
    .array(
      z.strictObject({
        path: z.string().min(1).max(1024).openapi({
          description: 'Repository-relative path, e.g. `factory.yaml` or `agents/triage/agent.md`.',
        }),
        content: z.string().max(MAX_TREE_FILE_CHARS).openapi({ description: 'The UTF-8 text of the file.' }),
      }),
    )
    .max(MAX_TREE_FILES)
    .openapi({ description: "The tree's `factory.yaml` and its `agents/<name>/agent.md` files." }),
});
