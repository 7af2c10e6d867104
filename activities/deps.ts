import type { ObjectStore } from '../infra/object-store/object-store';
import type { Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import type { Config } from '../core/config';
import type { Logger } from '../core/logger';
import type { BlobStore } from '../db/blob-store';
import type { RunCheckpoints } from './checkpoints/run-checkpoints';
import type { ImageStore } from './images/image-store';
import type { Sandbox } from './sandbox/sandbox';
import type { McpSessionCache } from './tools/mcp-sessions';
import type { SecretsKeyring } from '../core/secrets-keyring';

/** What activities are built from; wired in worker/. */
export interface ActivityDeps {
  dataSource: DataSource;
  config: Config;
  logger: Logger;
  /** The task queue only this worker polls: activities that touch a workspace it holds go there. */
  workspaceQueue: string;
  mcpSessions: McpSessionCache;
  /** Every process a run starts runs in it. */
  sandbox: Sandbox;
  /** A client on the worker's connection: a schedule's firing starts its run's workflow with it. */
  temporal: Client;
  /** Key of the MCP credentials stored with runs and schedules. */
  secretsKeyring: SecretsKeyring;
  /** Where artifacts and handoff files are stored. */
  blobs: BlobStore;
  /** The object store under `blobs` and checkpoints: a fork's manifest goes there. */
  objectStore: ObjectStore;
  /** Environments' container images on this worker. */
  images: ImageStore;
  /** Checkpoints of runs' files; undefined on a worker that cannot take them (it says why at start). */
  checkpoints?: RunCheckpoints;
}
