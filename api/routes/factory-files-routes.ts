import { createHash } from 'node:crypto';
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { notFound } from '../../core/api-error';
import type { Config } from '../../core/config';
import {
  CURRENT_FACTORY_SCHEMA_VERSION,
  factorySchemaDocuments,
  FACTORY_SCHEMA_VERSIONS,
  isFactorySchemaVersion,
  type FactorySchemaVersion,
} from '../../core/factory-tree/schema-documents';
import { factoryTreeValidateBodySchema, MAX_TREE_BODY_BYTES } from '../../core/schemas/factory-files-schemas';
import { validateUntrustedTree } from '../../services/untrusted-parse/untrusted-parser';
import { createClientAddressLimit } from '../middleware/client-address-limit';
import { jsonBody } from '../middleware/json-body';
import { rejectQueryParameters, validate } from '../validate';

export const FACTORY_FILES_PREFIX = '/api/v1/factory-files';

/**
 * The factory tree format, open to anyone like the OpenAPI document: its JSON Schema documents
 * by version (cacheable, with ETags), and `POST /validate`, which reads no team's state. Requests
 * count against RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE per client address (app.ts), a validation
 * against RATE_LIMIT_FACTORY_VALIDATE_PER_MINUTE too, and its body is at most MAX_TREE_BODY_BYTES.
 */
export function createFactoryFilesRouter({ config }: { config: Config }): Router {
  const router = new Router({ prefix: FACTORY_FILES_PREFIX });

  router.get('/schemas', (ctx) => {
    rejectQueryParameters(ctx.query);
    answerCacheable(ctx, SCHEMA_LIST);
  });

  router.get('/schemas/:schema_version', (ctx) => {
    rejectQueryParameters(ctx.query);
    answerCacheable(ctx, SCHEMA_BUNDLES.get(knownVersion(ctx.params.schema_version!))!);
  });

  router.get('/schemas/:schema_version/:document', (ctx) => {
    rejectQueryParameters(ctx.query);
    const version = knownVersion(ctx.params.schema_version!);
    const documents = factorySchemaDocuments(version);
    const document = Object.hasOwn(documents, ctx.params.document!) ? documents[ctx.params.document!] : undefined;
    if (!document) {
      throw notFound(
        `Schema version ${version} has no document "${ctx.params.document}"; it has ${Object.keys(documents).join(', ')}.`,
      );
    }
    answerCacheable(ctx, document);
    ctx.type = 'application/schema+json';
  });

  const validateLimit = createClientAddressLimit(config.quotas.factoryValidatePerMinute, {
    requests: 'factory file validations',
    variable: 'RATE_LIMIT_FACTORY_VALIDATE_PER_MINUTE',
  });
  const countValidation: Middleware = async (ctx, next) => {
    await validateLimit?.take(ctx.ip);
    await next();
  };
  // Counted before the body is read: parsing YAML is the expensive part.
  router.post('/validate', countValidation, jsonBody({ maxBytes: MAX_TREE_BODY_BYTES }), async (ctx) => {
    rejectQueryParameters(ctx.query);
    const { files } = validate(factoryTreeValidateBodySchema, ctx.state.body);
    ctx.body = (await validateUntrustedTree(files, config.workspace.gitAllowedOwners)).validation;
  });

  return router;
}

function knownVersion(version: string): FactorySchemaVersion {
  if (isFactorySchemaVersion(version)) return version;
  throw notFound(
    `No factory file schema version "${version}"; this server describes ${FACTORY_SCHEMA_VERSIONS.join(', ')} (GET ${FACTORY_FILES_PREFIX}/schemas).`,
  );
}

const SCHEMA_LIST = {
  current_version: CURRENT_FACTORY_SCHEMA_VERSION,
  versions: FACTORY_SCHEMA_VERSIONS.map((version) => ({
    schema_version: version,
    schema_url: `${FACTORY_FILES_PREFIX}/schemas/${version}`,
  })),
};

const SCHEMA_BUNDLES = new Map(
  FACTORY_SCHEMA_VERSIONS.map((version) => [
    version,
    { schema_version: version, documents: factorySchemaDocuments(version) },
  ]),
);

/** The ETag of each constant body, made the first time it is served. */
const etags = new WeakMap<object, string>();

/** A body that changes only with the service's version: an ETag, and 304 to a matching If-None-Match. */
function answerCacheable(ctx: Context, body: object): void {
  let etag = etags.get(body);
  if (etag === undefined) {
    etag = `"${createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 27)}"`;
    etags.set(body, etag);
  }
  ctx.status = 200;
  ctx.set('ETag', etag);
  ctx.set('Cache-Control', 'public, max-age=300');
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  ctx.body = body;
}
