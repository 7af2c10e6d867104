/** The shapes of the API's answers that the CLI reads (a subset of each). */

export interface StatusMessage {
  message?: string;
  error_code?: string;
  retryable?: boolean;
}

export interface ArtifactItem {
  artifact_type: string;
  created_at: string;
  /** A `FILE`'s; a `PLAN` has `artifact_uid`, `title`, `version`; a `PULL_REQUEST` `branch`, `status`, `url`. */
  data: {
    artifact_uid: string;
    filename: string;
    branch?: string;
    status?: string;
    url?: string;
    filepath?: string;
    mime_type?: string;
    size_bytes?: number;
    title?: string;
    version?: number;
  };
}

export interface RunItem {
  run_id: string;
  title: string;
  prompt?: string;
  state: string;
  created_at: string;
  updated_at: string;
  started_at?: string;
  run_time?: string;
  session_link?: string;
  conversation_id?: string;
  agent_config?: { name?: string; model_id?: string; environment_id?: string; skill_spec?: string };
  status_message?: StatusMessage;
  creator?: { display_name?: string; type?: string };
  source?: string;
  metadata?: Record<string, string>;
  request_usage?: { total_tokens?: number; inference_cost_usd?: number };
  artifacts?: ArtifactItem[];
  parent_run_id?: string;
  pending_approval?: PendingApproval;
}

/** What a BLOCKED run waits for. */
export interface PendingApproval {
  approval_id: string;
  kind: string;
  tool?: string;
  arguments?: Record<string, unknown>;
  question?: string;
  requested_at: string;
  expires_at: string;
}

export interface CreateRunResponse {
  run_id: string;
  task_id?: string;
  state: string;
}

export interface ListRunsResponse {
  runs: RunItem[];
  page_info: { has_next_page: boolean; next_cursor?: string };
}

export interface ArtifactResponse {
  artifact_type: string;
  artifact_uid: string;
  created_at: string;
  data: {
    filename: string;
    filepath?: string;
    content_type?: string;
    size_bytes?: number;
    download_url: string;
    expires_at?: string;
    description?: string;
    title?: string;
  };
}

/** `GET /agent/artifacts/{uid}` of a plan version. */
export interface PlanResponse {
  artifact_type: 'PLAN';
  artifact_uid: string;
  created_at: string;
  data: { content: string; content_type: string; document_uid: string; title: string; version: number };
}

/** One transcript entry as `GET /agent/runs/{id}/events` sends it in an event's `data`. */
export interface RunEvent {
  id: string;
  run_id: string;
  kind: string;
  turn: number;
  created_at: string;
  payload: Record<string, unknown>;
}

/** A managed secret as every endpoint shows it: never its value. */
export interface SecretItem {
  name: string;
  kind: string;
  description: string | null;
  created_at: string;
  updated_at: string;
}

export interface ListSecretsResponse {
  secrets: SecretItem[];
  page_info: { has_next_page: boolean; next_cursor?: string };
}
