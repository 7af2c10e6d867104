"""Schemathesis hooks for test/openapi-schemathesis.test.ts.

Each hook states one rule of the service that OpenAPI cannot express (a rule across several
values, or about values only the service can issue), and is applied to positive test cases only:
cases generated to be valid are kept valid under that rule too. The rule itself is in the
document's descriptions; negative cases, and every check, are left as they are.
"""

import base64
import json
import os

import schemathesis

CURSOR_OPERATIONS = ("GET /api/v1/agent/runs", "GET /api/v1/agent/conversations/{conversationId}")
ENVIRONMENT_BODIES = ("POST /api/v1/agent/environments", "PUT /api/v1/agent/environments/{uid}")
# Bodies with a run's config (`config`, or a schedule's `agent_config`) and its harness.
RUN_CONFIG_BODIES = {
    "POST /api/v1/agent/runs": "config",
    "POST /api/v1/agent/run": "config",
    "POST /api/v1/agent/schedules": "agent_config",
    "PUT /api/v1/agent/schedules/{scheduleId}": "agent_config",
}
# core/harnesses.ts: the reasoning levels Codex CLI knows; Claude Code and Gemini CLI take none.
CODEX_REASONING_LEVELS = ("minimal", "low", "medium", "high")
# A receiver on loopback that the test stack's OUTBOUND_ALLOWED_PRIVATE_HOSTS lets webhooks reach.
WEBHOOK_URL = os.environ.get("SCHEMATHESIS_WEBHOOK_URL")


def _issued_cursor(value) -> bool:
    """A cursor the service could have issued (base64url JSON object); others are 400, as documented."""
    if not isinstance(value, str) or not value:
        return False
    try:
        payload = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(payload, dict)


def _unique_repositories(repos: list) -> list:
    seen = set()
    unique = []
    for repo in repos:
        name = repo.get("repo") if isinstance(repo, dict) else None
        if name not in seen:
            seen.add(name)
            unique.append(repo)
    return unique


@schemathesis.hook
def map_case(context, case):
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return case
    label = f"{case.operation.method.upper()} {case.operation.path}"
    query = case.query if isinstance(case.query, dict) else None
    body = case.body if isinstance(case.body, dict) else None

    # `cursor` is `page_info.next_cursor` of the previous page with the same filters: only the
    # service issues valid ones (links in the stateful phase pass real ones).
    if query is not None and label in CURSOR_OPERATIONS and "cursor" in query:
        if not _issued_cursor(query["cursor"]):
            del query["cursor"]

    # The transcript page shows the events after one event or before one, not both.
    if query is not None and label == "GET /sessions/{sessionId}" and "after" in query and "before" in query:
        del query["before"]

    # Each repository is cloned into a directory named after it: repository names are unique.
    if body is not None and label in ENVIRONMENT_BODIES:
        config = body.get("config")
        if isinstance(config, dict) and isinstance(config.get("github_repos"), list):
            config["github_repos"] = _unique_repositories(config["github_repos"])

    # `harness_auth_secrets` must name a managed secret of the team, of a kind the run's harness
    # takes; `reasoning_level` must be one Codex knows, and is refused by the CLIs that have none.
    config = body.get(RUN_CONFIG_BODIES[label]) if body is not None and label in RUN_CONFIG_BODIES else None
    if isinstance(config, dict):
        config.pop("harness_auth_secrets", None)
        harness = config.get("harness")
        if isinstance(harness, dict) and harness.get("reasoning_level"):
            kind = harness.get("type")
            if kind in ("claude", "gemini") or (
                kind == "codex" and harness["reasoning_level"] not in CODEX_REASONING_LEVELS
            ):
                del harness["reasoning_level"]

    # A webhook URL must resolve to a public address or a host the operator allows: no made-up
    # host does, so valid cases subscribe the test's receiver (links then reach the webhook by id).
    if body is not None and label == "POST /api/v1/agent/webhooks" and WEBHOOK_URL and "url" in body:
        body["url"] = WEBHOOK_URL

    # Metadata values are at most 256 bytes of UTF-8 (the schema can only count characters).
    metadata = body.get("metadata") if body is not None else None
    if isinstance(metadata, dict):
        for key, value in list(metadata.items()):
            if isinstance(value, str) and len(value.encode("utf-8")) > 256:
                metadata[key] = value.encode("utf-8")[:256].decode("utf-8", "ignore")
    return case
