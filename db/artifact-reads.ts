import type { EntityManager } from 'typeorm';
import { externalReferencesOfRuns, type ExternalReference } from './external-reference-reads';
import { plansOfRuns, type PlanArtifact } from './plan-reads';
import { pullRequestsOfRuns, type PullRequestArtifact } from './pull-request-reads';

/** Artifact types the official clients know; this service makes all but `SCREENSHOT` (an image `FILE` stands for one). */

export { ARTIFACT_TYPES, type ArtifactType } from '../core/artifact-types';

export interface FileArtifact {
  kind: 'FILE';
  artifactUid: string;
  runId: string;
  teamId: string;
  filepath: string;
  filename: string;
  mimeType: string;
  description: string | null;
  title: string | null;
  sizeBytes: number;
  blobId: string;
  createdAt: Date;
}

export const COLUMNS = `artifact_uid, run_id, team_id, filepath, filename, mime_type, description, title, size_bytes, blob_id, created_at`;

/** Maps a raw `artifacts` row to the artifact. */
export function toArtifact(row: Record<string, unknown>): FileArtifact {
  return {
    kind: 'FILE',
    artifactUid: row.artifact_uid as string,
    runId: row.run_id as string,
    teamId: row.team_id as string,
    filepath: row.filepath as string,
    filename: row.filename as string,
    mimeType: row.mime_type as string,
    description: (row.description as string | null) ?? null,
    title: (row.title as string | null) ?? null,
    sizeBytes: Number(row.size_bytes),
    blobId: row.blob_id as string,
    createdAt: row.created_at as Date,
  };
}

/** An artifact of a team (null for another team's, as for none). */
export async function findArtifact(
  manager: EntityManager,
  artifactUid: string,
  teamId?: string,
): Promise<FileArtifact | null> {
  const rows = (await manager.query(
    `SELECT ${COLUMNS} FROM artifacts WHERE artifact_uid = $1 AND ($2::uuid IS NULL OR team_id = $2::uuid)`,
    [artifactUid, teamId ?? null],
  )) as Record<string, unknown>[];
  return rows[0] ? toArtifact(rows[0]) : null;
}

/** What a run leaves behind that its `artifacts` list: files it uploaded, its plans, its pull requests, and what it reported making elsewhere. */
export type RunArtifact = FileArtifact | PlanArtifact | PullRequestArtifact | ExternalReference;

/** The artifacts of each of `runIds` (files, plan versions, pull requests and external references), oldest first. */
export async function artifactsOfRuns(manager: EntityManager, runIds: string[]): Promise<Map<string, RunArtifact[]>> {
  const byRun = new Map<string, RunArtifact[]>();
  if (runIds.length === 0) return byRun;
  const rows = (await manager.query(
    `SELECT ${COLUMNS} FROM artifacts WHERE run_id = ANY($1::uuid[]) ORDER BY created_at, artifact_uid`,
    [runIds],
  )) as Record<string, unknown>[];
  const all: RunArtifact[] = [
    ...rows.map(toArtifact),
    ...(await plansOfRuns(manager, runIds)),
    ...(await pullRequestsOfRuns(manager, runIds)),
    ...(await externalReferencesOfRuns(manager, runIds)),
  ];
  // A stable sort: files keep their order among themselves, and so do plans, pull requests and references.
  all.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  for (const artifact of all) {
    const list = byRun.get(artifact.runId) ?? [];
    list.push(artifact);
    byRun.set(artifact.runId, list);
  }
  return byRun;
}
