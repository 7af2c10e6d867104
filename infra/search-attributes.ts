import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Logger } from '../core/logger';
import { SEARCH_ATTRIBUTE_KEYS } from '../workflows/run-contract';

/** Registers the project's custom search attributes on a namespace where they are missing. */
export async function ensureSearchAttributes(connection: Connection, namespace: string, logger: Logger): Promise<void> {
  try {
    const existing = await connection.operatorService.listSearchAttributes({ namespace });
    const missing = SEARCH_ATTRIBUTE_KEYS.filter((key) => !(key.name in (existing.customAttributes ?? {})));
    if (missing.length === 0) return;
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(
        missing.map((key) => [key.name, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
      ),
    });
    logger.info('registered search attributes', { namespace, added: missing.map((k) => k.name) });
  } catch (err) {
    logger.warn(
      'could not check or register the custom search attributes; register them with `temporal operator search-attribute create`',
      { namespace, error: err instanceof Error ? err.message : String(err) },
    );
  }
}
