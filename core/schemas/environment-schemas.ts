import { IMAGE_REFERENCE_PATTERN, IMAGE_REFERENCE_RULE } from '../image-reference';
import { nonBlankText } from './text';
import { resourcePageQuery } from './resource-page-schemas';
import { jsonSchema, z } from './zod';
import { ALLOWED_DOMAIN_PATTERN, MAX_ALLOWED_DOMAIN_CHARS, networkPolicySchema } from '../network-policy';
import { approvalPolicySchema } from './approval-schemas';
import { deliverySchema } from './delivery-schemas';

/** A GitHub owner or repository name; `.` and `..` are path segments, not names (they would escape the git host or workspace). */
const REPO_PART = /^(?!\.\.?$)[A-Za-z0-9_.-]{1,100}$/;
const REPO_PART_RULE = 'must be 1-100 of [A-Za-z0-9_.-], and not "." or ".."';
/** `owner/repo`, each part a REPO_PART. */
export const REPOSITORY_PATTERN = /^(?!\.\.?\/)[A-Za-z0-9_.-]{1,100}\/(?!\.\.?$)[A-Za-z0-9_.-]{1,100}$/;

/** `CloudEnvironmentConfig`: what an environment holds. */
export const environmentConfigSchema = z
  .strictObject({
    name: nonBlankText(200),
    description: z.string().max(2000).nullable().optional(),
    docker_image: z
      .string()
      .min(1)
      .max(500)
      .optional()
      .openapi({
        pattern: IMAGE_REFERENCE_PATTERN,
        description: `The environment's container image: ${IMAGE_REFERENCE_RULE}. Its registry must be one IMAGE_ALLOWED_REGISTRIES lists (when set).`,
      }),
    github_repos: z
      .array(
        z.strictObject({
          owner: z.string().regex(REPO_PART, REPO_PART_RULE),
          repo: z.string().regex(REPO_PART, REPO_PART_RULE),
        }),
      )
      .max(20)
      .refine(
        (repos) => new Set(repos.map((r) => r.repo)).size === repos.length,
        'repository names must be unique (each is cloned into a directory of that name)',
      )
      .optional(),
    setup_commands: z.array(z.string().min(1).max(10_000)).max(50).optional(),
    setup_snapshot: z.boolean().optional().openapi({
      description:
        "Keep the workspace and home as setup left them, and start the next run from that snapshot instead of cloning and setting up again, while the repositories' commits, the image's digest and this configuration are unchanged (and the snapshot is younger than ENVIRONMENT_SNAPSHOT_MAX_AGE_HOURS). Files only: a process setup started is not in it. Default false.",
    }),
    approval: approvalPolicySchema.optional(),
    delivery: deliverySchema.optional(),
    /** What the run's processes may reach: `open`, `none` or `{allowed_domains}`; AGENT_NETWORK_DEFAULT when absent. */
    network: networkPolicySchema.optional().openapi(
      jsonSchema({
        description:
          '`open` (any public address), `none`, or `{allowed_domains}` (public addresses of those domains; `*.` for subdomains). AGENT_NETWORK_DEFAULT when absent.',
        anyOf: [
          { type: 'string', enum: ['open', 'none'] },
          {
            type: 'object',
            properties: {
              allowed_domains: {
                type: 'array',
                minItems: 1,
                maxItems: 200,
                items: { type: 'string', pattern: ALLOWED_DOMAIN_PATTERN, maxLength: MAX_ALLOWED_DOMAIN_CHARS },
              },
            },
            required: ['allowed_domains'],
            additionalProperties: false,
          },
        ],
      }),
    ),
  })
  .openapi('EnvironmentConfig');

export const environmentBodySchema = z.strictObject({ config: environmentConfigSchema }).openapi('EnvironmentRequest');

export const environmentListQuerySchema = z.strictObject({
  sort_by: z.enum(['name', 'last_updated']).optional(),
  ...resourcePageQuery,
});
