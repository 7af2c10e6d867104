import type { DataSource } from 'typeorm';
import type { Config } from '../core/config';
import type { SecretsKeyring } from '../core/secrets-keyring';

/** What a feature's service is built from (`create<Feature>Service`), in api/app.ts or an entry point of bin/. */
export interface ServiceDeps {
  config: Config;
  dataSource: DataSource;
  /** Encrypts what the feature stores write-only: MCP credentials, secrets' values, webhooks' signing secrets. */
  secretsKeyring: SecretsKeyring;
}
