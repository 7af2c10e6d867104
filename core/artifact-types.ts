/** The kinds of artifact a run can leave behind (only `FILE` is made by this service's tools). */
export const ARTIFACT_TYPES = ['PLAN', 'PULL_REQUEST', 'SCREENSHOT', 'FILE', 'EXTERNAL_REFERENCE'] as const;
export type ArtifactType = (typeof ARTIFACT_TYPES)[number];
