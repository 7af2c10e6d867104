import type { NetworkPolicy } from '../../core/network-policy';
import type { PullRequestToolArguments } from '../../core/pull-request-tool';
import type { ArtifactFile } from '../../db/artifacts';
import type { RepositoryDelivery } from '../delivery/deliver-run';
import type { NetworkRefusal } from '../sandbox/egress-proxy';
import type { RunDiskQuota } from '../sandbox/run-disk';
import type { RunProcesses } from '../sandbox/sandboxed-process';
import type { WorkspaceFiles } from '../sandbox/workspace-files';

/** What a tool call produced: the text the model sees, and what the transcript keeps. */
export interface ToolOutcome {
  output: string;
  isError: boolean;
  details?: {
    exit_code?: number | null;
    duration_ms?: number;
    timed_out?: boolean;
    full_output?: string;
    network_refusals?: NetworkRefusal[];
    interrupted?: boolean;
    artifact_uid?: string;
  };
  skillLoad?: { bundled_skill_id: string } | { skill_path: string };
}

export interface AdvertisedSkill {
  name: string;
  description: string;
  content: string;
  source: { bundled_skill_id: string } | { skill_path: string };
}

export interface ToolContext {
  /** The run's processes and files, each in the run's sandbox. */
  processes: RunProcesses;
  files: WorkspaceFiles;
  networkPolicy: NetworkPolicy;
  signal: AbortSignal;
  commandTimeoutSeconds: number;
  outputLimitBytes: number;
  skills: AdvertisedSkill[];
  /** Records a `FILE` artifact of this tool call (once, however often the call is retried). */
  recordArtifact?: (artifact: ArtifactUpload) => Promise<{ artifactUid: string }>;
  /** Records the next version of the run's plan (once per tool call); only in plan mode. */
  recordPlan?: (plan: { title: string; markdown: string }) => Promise<{ artifactUid: string; version: number }>;
  /** Records an external reference of the run (its canonical URL; once per URL). */
  recordExternalReference?: (ref: { url: string; referenceType: string; title: string | null }) => Promise<void>;
  /** Delivers the run's change now as its pull requests; only in a run that delivers them, and not in plan mode. */
  openPullRequest?: (request: PullRequestToolArguments) => Promise<RepositoryDelivery[]>;
  /** The run's disk limit: watched while a command runs, checked after a tool writes. */
  disk?: RunDiskQuota;
  /** The run's memory limit in MiB, for the note an OOM kill gets. */
  memoryLimitMb?: number;
}

/** A file `upload_artifact` read from the workspace. */
export type ArtifactUpload = ArtifactFile;
