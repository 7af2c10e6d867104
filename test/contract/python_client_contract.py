"""Drives every endpoint of the official Python client (oz-agent-sdk) against this service with
strict response validation: a response the client's own types reject fails here.

Environment: OZ_API_BASE_URL (…/api/v1), WARP_API_KEY (a personal key of a fresh team),
MARKER (runs whose prompt holds it are answered at once by the test's scripted model),
WORK_MARKER (a run whose model writes a file and uploads it as an artifact).
Prints one JSON line: the endpoints it called, in order.
"""

import json
import os
import sys
import time

import httpx
from oz_agent_sdk import OzAPI, NotFoundError

MARKER = os.environ["MARKER"]
WORK_MARKER = os.environ["WORK_MARKER"]
client = OzAPI(_strict_response_validation=True, max_retries=0, timeout=30)
called = []


def step(name, result):
    called.append(name)
    return result


def wait_until_ended(run_id, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        run = step("runs.retrieve", client.agent.runs.retrieve(run_id))
        if run.state in ("SUCCEEDED", "FAILED", "ERROR", "CANCELLED"):
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not end within {timeout} s")


# Runs: create (with fields the client sends), retrieve, list, follow-up, cancel.
created = step(
    "agent.run",
    client.agent.run(
        prompt=f"Contract {MARKER}",
        title="contract run",
        mode="normal",
        interactive=False,
        team=True,
        metadata={"suite": "contract"},
        config={"name": "contract-bot", "idle_timeout_minutes": 0, "harness": {"type": "oz"}},
    ),
)
run = wait_until_ended(created.run_id)
assert run.state == "SUCCEEDED", run
assert run.status_message is not None and run.status_message.message, "a SUCCEEDED run carries the agent's answer"
listed = step("runs.list", client.agent.runs.list(name="contract-bot", source="API", limit=5))
assert [r.run_id for r in listed.runs] == [created.run_id], listed
followed = step("runs.submit_followup", client.agent.runs.submit_followup(created.run_id, message=f"Again {MARKER}"))
wait_until_ended(created.run_id)

held = step("agent.run", client.agent.run(prompt=f"Held {MARKER} hold", config={"idle_timeout_minutes": 0}))
cancelled = step("runs.cancel", client.agent.runs.cancel(held.run_id))
assert cancelled == held.run_id, cancelled
assert wait_until_ended(held.run_id).state == "CANCELLED"

# Lineage and factories: a run below another, and a run dispatched to a factory (made over plain
# HTTP: the client has no factory API), listed through the client's filters.
child = step("agent.run", client.agent.run(prompt=f"Child {MARKER}", parent_run_id=run.run_id, config={"idle_timeout_minutes": 0}))
assert wait_until_ended(child.run_id).parent_run_id == run.run_id
below = step("runs.list", client.agent.runs.list(ancestor_run_id=run.run_id))
assert [r.run_id for r in below.runs] == [child.run_id], below
http = httpx.Client(base_url=os.environ["OZ_API_BASE_URL"], headers={"Authorization": f"Bearer {os.environ['WARP_API_KEY']}"})
factory = http.post("/agent/factories", json={"name": "contract-factory"}).json()
http.post("/agent/identities", json={"name": "contract-foreman", "agent_type": "FOREMAN", "factory_uid": factory["uid"]}).raise_for_status()
dispatched = http.post(f"/agent/factories/{factory['uid']}/runs", json={"prompt": f"Factory work {MARKER}"})
assert dispatched.status_code == 201, dispatched.text
foreman_run = wait_until_ended(dispatched.json()["run_id"])
assert foreman_run.state == "SUCCEEDED", foreman_run
of_factory = step("runs.list", client.agent.runs.list(factory_uid=factory["uid"]))
assert [r.run_id for r in of_factory.runs] == [foreman_run.run_id], of_factory
members = step("identities.list", client.agent.agent.list(factory_uid=factory["uid"]))
assert [a.name for a in members.agents] == ["contract-foreman"], members

# Conversations and sessions: the redirect checks.
session = step("sessions.check_redirect", client.agent.sessions.check_redirect(run.session_id))
assert session.conversation_id == run.conversation_id, session
conversation = step("conversations.check_redirect", client.agent.conversations.check_redirect(run.conversation_id))
assert conversation.session_id, conversation

# Agents seen in runs, environments.
agents = step("agent.list", client.agent.list())
assert isinstance(agents.agents, list), agents  # skills of the team's environments
environments = step("agent.list_environments", client.agent.list_environments())

# Agent identities.
identity = step(
    "identities.create",
    client.agent.agent.create(name="contract-identity", description="made by the contract test", agent_type="CUSTOM"),
)
step("identities.get", client.agent.agent.get(identity.uid))
step("identities.list", client.agent.agent.list())
updated = step("identities.update", client.agent.agent.update(identity.uid, name="contract-identity-2"))
assert updated.name == "contract-identity-2", updated
assert updated.description == "made by the contract test", updated
# What the client sends for a partial update: only the fields given; the rest keep their values.
updated = step("identities.update", client.agent.agent.update(identity.uid, description="changed by the client"))
assert (updated.name, updated.description, updated.agent_type) == (
    "contract-identity-2",
    "changed by the client",
    "CUSTOM",
), updated
as_identity = step(
    "agent.run",
    client.agent.run(prompt=f"As identity {MARKER}", agent_identity_uid=identity.uid, config={"idle_timeout_minutes": 0}),
)
assert wait_until_ended(as_identity.run_id).executor.uid == identity.uid
step("identities.delete", client.agent.agent.delete(identity.uid))
try:
    client.agent.agent.get(identity.uid)
    raise AssertionError("a deleted identity is gone")
except NotFoundError:
    pass

# Schedules.
schedule = step(
    "schedules.create",
    client.agent.schedules.create(name="nightly", cron_schedule="0 3 * * *", prompt=f"Nightly {MARKER}"),
)
step("schedules.retrieve", client.agent.schedules.retrieve(schedule.id))
step("schedules.list", client.agent.schedules.list())
step(
    "schedules.update",
    client.agent.schedules.update(
        schedule.id, name="nightly", cron_schedule="30 3 * * *", enabled=True, prompt=f"Nightly {MARKER}"
    ),
)
paused = step("schedules.pause", client.agent.schedules.pause(schedule.id))
assert paused.enabled is False, paused
resumed = step("schedules.resume", client.agent.schedules.resume(schedule.id))
assert resumed.enabled is True, resumed
assert step("schedules.delete", client.agent.schedules.delete(schedule.id)).success is True

# Artifacts and handoff attachments: a run whose agent changes a file and uploads it.
work = step("agent.run", client.agent.run(prompt=f"Work {WORK_MARKER}", config={"idle_timeout_minutes": 0}))
worked = wait_until_ended(work.run_id)
assert worked.state == "SUCCEEDED", worked
files = [a for a in worked.artifacts or [] if a.artifact_type == "FILE"]
assert files, worked.artifacts
artifact = step("agent.get_artifact", client.agent.get_artifact(files[0].data.artifact_uid))
assert artifact.artifact_type == "FILE" and artifact.data.filename == files[0].data.filename, artifact
downloaded = httpx.get(artifact.data.download_url)  # no key: the URL is signed
assert downloaded.status_code == 200, downloaded
attachments = step("runs.list_handoff_attachments", client.agent.runs.list_handoff_attachments(work.run_id))
assert attachments.attachments, attachments
patch = httpx.get(attachments.attachments[0].download_url)
assert patch.status_code == 200 and b"+++" in patch.content, patch

print(json.dumps({"called": called}))
