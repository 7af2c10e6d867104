/** The kinds of artifact a run can leave behind (this service makes all but `SCREENSHOT`). */
export const ARTIFACT_TYPES = ['PLAN', 'PULL_REQUEST', 'SCREENSHOT', 'FILE', 'EXTERNAL_REFERENCE'] as const;
export type ArtifactType = (typeof ARTIFACT_TYPES)[number];
