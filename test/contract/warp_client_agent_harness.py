"""The newest official client (warp-platform-sdk) keeps a harness on an agent and on a schedule, strictly validated.

Creates an agent with harness and harness_auth_secrets, updates it partly and wholly, reads and
lists it, and creates a schedule of it with a harness of its own; prints what it saw as one JSON line.
"""

import json
import os
import sys

from warp_platform_sdk import APIResponseValidationError, WarpClient


def explain(err: APIResponseValidationError) -> None:
    """What the strict validation refused, and the body it refused, for the test's failure message."""
    print(f"{err.__cause__}\n{json.dumps(err.body)[:4000]}", file=sys.stderr)
    raise err


sys.excepthook = lambda kind, err, tb: (
    explain(err) if isinstance(err, APIResponseValidationError) else sys.__excepthook__(kind, err, tb)
)

client = WarpClient(
    api_key=os.environ["WARP_API_KEY"],
    base_url=os.environ["WARP_BASE_URL"],
    _strict_response_validation=True,
)
agents = client.agent.agent


def harness_of(agent):
    """The harness fields of an AgentResponse, as plain values."""
    return {
        "harness": agent.harness.model_dump(by_alias=True, exclude_none=True) if agent.harness else None,
        "base_harness": agent.base_harness,
        "harness_auth_secrets": agent.harness_auth_secrets.model_dump(exclude_none=True)
        if agent.harness_auth_secrets
        else None,
    }


created = agents.create(
    name=os.environ["AGENT_NAME"],
    harness={"type": "claude", "model_id": "claude-haiku-4-5"},
    harness_auth_secrets={"claude_auth_secret_name": os.environ["CLAUDE_SECRET"]},
)
kept = agents.update(created.uid, description="only the description")
replaced = agents.update(
    created.uid,
    harness={"type": "codex", "reasoning_level": "high"},
    harness_auth_secrets={"codex_auth_secret_name": os.environ["CODEX_SECRET"]},
)
got = agents.get(created.uid)
listed = [a for a in agents.list().agents if a.uid == created.uid]
schedule = client.agent.schedules.create(
    name="nightly",
    cron_schedule="0 3 * * *",
    prompt="Check the build.",
    agent_uid=created.uid,
    agent_config={"harness": {"type": "claude", "model_id": "claude-sonnet-4-5"}},
)
retrieved = client.agent.schedules.retrieve(schedule.id)
client.agent.schedules.delete(schedule.id)
cleared = agents.update(created.uid, base_harness="", harness_auth_secrets={})
print(
    json.dumps(
        {
            "created": harness_of(created),
            "kept": harness_of(kept),
            "replaced": harness_of(replaced),
            "got": harness_of(got),
            "listed": [harness_of(a) for a in listed],
            "schedule": retrieved.agent_config.harness.model_dump(by_alias=True, exclude_none=True)
            if retrieved.agent_config and retrieved.agent_config.harness
            else None,
            "cleared": harness_of(cleared),
        }
    )
)
