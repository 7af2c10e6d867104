import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { DIAGNOSTIC_CODES } from '../../core/factory-tree/diagnostics';
import type { validateFactoryTree } from '../../core/factory-tree/validate-tree';
import { factoryTreeValidateBodySchema } from '../../core/schemas/factory-files-schemas';
import { z } from '../../core/schemas/zod';
import { registerOperation } from './common';
import type { Fits } from './fits';

const tags = ['Factories'];

/** `POST /factory-files/validate` (core/factory-tree/validate-tree.ts). */
const treeValidationSchema = z
  .object({
    valid: z
      .boolean()
      .openapi({ description: 'No parser or state-independent diagnostic; not a promise that the tree applies.' }),
    schema_version: z.string().openapi({ description: 'The version factory.yaml declares, or the current one.' }),
    diagnostics: z.array(
      z.object({
        code: z.enum(Object.values(DIAGNOSTIC_CODES) as [string, ...string[]]),
        path: z.string(),
        line: z.number().int().min(1),
        column: z.number().int().min(1),
        message: z.string(),
      }),
    ),
    deferred_resolutions: z.array(
      z.object({ path: z.string(), field: z.string(), kind: z.enum(['skill', 'model']) }).openapi({
        description: 'An authored value whose existence was deliberately not proven (not invalid).',
      }),
    ),
    state_dependent_checks_not_run: z.array(z.string()),
    validation_scope: z.object({
      parser: z.enum(['checked', 'not_run']),
      state_independent: z.enum(['checked', 'not_run']),
      state_dependent: z.enum(['not_checked']),
    }),
  })
  .openapi('FactoryTreeValidation');

const schemaListSchema = z
  .object({
    current_version: z.string(),
    versions: z.array(z.object({ schema_version: z.string(), schema_url: z.string() })),
  })
  .openapi('FactoryFileSchemaVersions');

const jsonSchemaDocument = z
  .record(z.string(), z.unknown())
  .openapi({ description: 'A JSON Schema 2020-12 document.' });

const schemaBundleSchema = z
  .object({
    schema_version: z.string(),
    documents: z
      .record(z.string(), jsonSchemaDocument)
      .openapi({ description: "Keyed by file name, each document's `$id`." }),
  })
  .openapi('FactoryFileSchemaBundle');

const versionParams = z.object({
  schema_version: z.string().openapi({ param: { description: 'A schema version, e.g. `v1alpha1`.' } }),
});
const documentParams = versionParams.extend({
  document: z.string().openapi({ param: { description: 'A document file name, e.g. `factory.schema.json`.' } }),
});
const conditionalHeaders = z.object({
  'If-None-Match': z.string().optional().openapi({ description: 'An ETag of an earlier answer: 304 when unchanged.' }),
});
const cacheHeaders = {
  ETag: { description: 'The version of this answer.', required: true, schema: { type: 'string' } },
  'Cache-Control': { description: 'How long the answer may be cached.', required: true, schema: { type: 'string' } },
} as const;
const notModified = { status: 304 as const, description: 'Unchanged since the ETag sent.', headers: cacheHeaders };

export function registerFactoryFileOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/factory-files/validate',
    operationId: 'validateFactoryFiles',
    summary: 'Validate a factory tree (factory.yaml and agents/<name>/agent.md)',
    description:
      "Parses the files and checks them against this server's JSON Schema documents and the rules across files that need no team's state; nothing is stored. Open to anyone, counted per client address; problems are 200 with `valid: false` and every diagnostic at its line and column.",
    tags,
    auth: false,
    body: { schema: factoryTreeValidateBodySchema },
    responses: [
      { status: 200, description: 'The diagnostics, and what the validator did.', schema: treeValidationSchema },
    ],
    errors: [429],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/factory-files/schemas',
    operationId: 'listFactoryFileSchemas',
    summary: 'The factory file schema versions this server describes',
    tags,
    auth: false,
    headers: conditionalHeaders,
    responses: [
      { status: 200, description: 'The versions.', schema: schemaListSchema, headers: cacheHeaders },
      notModified,
    ],
    errors: [400, 429],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/factory-files/schemas/{schema_version}',
    operationId: 'getFactoryFileSchemaBundle',
    summary: 'Every JSON Schema document of one version',
    tags,
    auth: false,
    params: versionParams,
    headers: conditionalHeaders,
    responses: [
      { status: 200, description: 'The documents.', schema: schemaBundleSchema, headers: cacheHeaders },
      notModified,
    ],
    errors: [400, 404, 429],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/factory-files/schemas/{schema_version}/{document}',
    operationId: 'getFactoryFileSchemaDocument',
    summary: 'One JSON Schema document, usable as a `$schema` reference',
    tags,
    auth: false,
    params: documentParams,
    headers: conditionalHeaders,
    responses: [
      {
        status: 200,
        description: 'The document; its relative `$ref`s resolve against its siblings at this path.',
        schema: jsonSchemaDocument,
        contentType: 'application/schema+json',
        headers: cacheHeaders,
      },
      notModified,
    ],
    errors: [400, 404, 429],
  });
}

export type TreeValidationFits = Fits<
  typeof treeValidationSchema,
  ReturnType<typeof validateFactoryTree>['validation']
>;
