import { parseImageReference } from './image-reference';

/** A team's credential for one registry: a managed secret of kind `registry_credentials`. */
export interface RegistryCredential {
  /** `host` or `host:port`, lower case, as image references name it. */
  registry: string;
  username: string;
  password: string;
}

export const REGISTRY_CREDENTIAL_RULE =
  '`username:password@registry`, the registry as images name it (with its port where there is one), e.g. `ci-bot:ghp_token@ghcr.io`';

/** Reads a `registry_credentials` secret's value; undefined when it is not `username:password@registry`. */
export function parseRegistryCredential(value: string): RegistryCredential | undefined {
  const at = value.lastIndexOf('@');
  const colon = value.indexOf(':');
  if (at < 0 || colon < 1 || colon > at - 2) return undefined;
  const registryText = value.slice(at + 1);
  const parsed = parseImageReference(`${registryText}/probe`);
  if (!parsed.ok || parsed.image.registry !== registryText.toLowerCase()) return undefined;
  return { registry: parsed.image.registry, username: value.slice(0, colon), password: value.slice(colon + 1, at) };
}
