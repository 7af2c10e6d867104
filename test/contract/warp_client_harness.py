"""The newest official client (warp-platform-sdk) runs Claude Code with a team secret, strictly validated.

Creates a run with config.harness and config.harness_auth_secrets, follows it to the end and reads
its harness usage; prints what it saw as one JSON line.
"""

import json
import os
import time

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
marker = os.environ["MARKER"]

created = client.agent.run(
    prompt=f"Say hello {marker}",
    config={
        "harness": {"type": "claude", "model_id": "claude-sonnet-4-5"},
        "harness_auth_secrets": {"claude_auth_secret_name": os.environ["SECRET_NAME"]},
    },
)
deadline = time.monotonic() + 120
while True:
    run = client.agent.runs.retrieve(created.run_id)
    if run.state in ("SUCCEEDED", "FAILED", "ERROR", "CANCELLED") or time.monotonic() > deadline:
        break
    time.sleep(0.2)
usage = client.agent.runs.get_harness_usage(created.run_id)
print(
    json.dumps(
        {
            "run_id": created.run_id,
            "state": run.state,
            "harness": run.agent_config.harness.type if run.agent_config and run.agent_config.harness else None,
            "usage_available": usage.available,
            "usage_harness": usage.usage.harness if usage.usage else None,
            "tool_calls_total": usage.usage.snapshot.payload.tool_calls.total
            if usage.usage and usage.usage.snapshot.payload.tool_calls
            else None,
        }
    )
)
