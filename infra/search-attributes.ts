import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Logger } from '../core/logger';
import { SEARCH_ATTRIBUTE_KEYS } from '../workflows/run-contract';

export class MissingSearchAttributesError extends Error {
  override name = 'MissingSearchAttributesError';
}

/**
 * Registers the project's custom search attributes on a namespace where they are missing, and
 * refuses to go on without them: every run's workflow sets them, so without them every create
 * would fail with INVALID_ARGUMENT, which no retry can fix.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string, logger: Logger): Promise<void> {
  const missingNow = async () => {
    const existing = await connection.operatorService.listSearchAttributes({ namespace });
    return SEARCH_ATTRIBUTE_KEYS.filter((key) => !(key.name in (existing.customAttributes ?? {})));
  };
  let missing;
  try {
    missing = await missingNow();
  } catch (err) {
    // Some hosted Temporal services do not offer the operator API: nothing to check here.
    logger.warn('could not list the namespace search attributes; make sure they are registered', {
      namespace,
      error: err instanceof Error ? err.message : String(err),
    });
    return;
  }
  if (missing.length === 0) return;
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(
        missing.map((key) => [key.name, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
      ),
    });
    logger.info('registered search attributes', { namespace, added: missing.map((k) => k.name) });
    return;
  } catch (err) {
    const names = missing.map((k) => k.name);
    throw new MissingSearchAttributesError(
      `The Temporal namespace "${namespace}" lacks the search attributes ${names.join(', ')} and they could not be registered (${err instanceof Error ? err.message : String(err)}). Register them, then start again:\n` +
        names
          .map(
            (name) =>
              `  temporal operator search-attribute create --namespace ${namespace} --name ${name} --type Keyword`,
          )
          .join('\n'),
    );
  }
}
