import { DIAGNOSTIC_CODES, FILE_START } from './diagnostics';
import { FACTORY_YAML, type TreeFile } from './tree-files';
import { STATE_DEPENDENT_CHECKS, type TreeValidation } from './validate-tree';
import { CURRENT_FACTORY_SCHEMA_VERSION } from './schema-documents';

/**
 * The answer for a tree whose parse did not finish within the service's limits (its parser
 * process ran past its deadline or stopped): one FF_PARSE_LIMIT at the tree's factory.yaml,
 * in the shape of every other answer. `why` finishes "could not be parsed within this
 * service's limits: …".
 */
export function unparsedTreeValidation(files: readonly TreeFile[], why: string): TreeValidation {
  const factoryFile = files.find((file) => file.path.split('/').at(-1) === FACTORY_YAML);
  return {
    valid: false,
    schema_version: CURRENT_FACTORY_SCHEMA_VERSION,
    diagnostics: [
      {
        code: DIAGNOSTIC_CODES.parseLimit,
        path: factoryFile?.path ?? FACTORY_YAML,
        ...FILE_START,
        message: `the tree could not be parsed within this service's limits: ${why}; make its files smaller and simpler`,
      },
    ],
    deferred_resolutions: [],
    state_dependent_checks_not_run: [...STATE_DEPENDENT_CHECKS],
    validation_scope: { parser: 'not_run', state_independent: 'not_run', state_dependent: 'not_checked' },
  };
}
