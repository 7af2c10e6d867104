import type { DataSource } from 'typeorm';
import type { Config } from '../core/config';
import type { Logger } from '../core/logger';

/** What activities are built from; wired in worker/. */
export interface ActivityDeps {
  dataSource: DataSource;
  config: Config;
  logger: Logger;
}
