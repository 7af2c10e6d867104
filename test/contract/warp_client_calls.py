"""Makes calls of an official client, strictly validated; prints what each answered.

The client is the newest (warp-platform-sdk, `WarpClient`) unless CLIENT_PACKAGE and CLIENT_CLASS
name another (warp_sdk, `WarpAPI`: the oldest).

Reads a JSON list of calls on stdin, each {"call": "agent.runs.retrieve", "args": [...], "kwargs": {...}};
prints one JSON line: a list of {"ok": <the response as JSON>} or {"error": <class>, "status": <HTTP status>,
"body": <problem document>} in the same order. A response the client's strict validation refuses is an
error too ({"error": "APIResponseValidationError", "detail": ...}). Binary responses (downloads, which
the client follows through redirects) answer {"ok": {"bytes": <text>, "content_type": ...}}.
"""

import json
import os
import sys

import importlib

package = importlib.import_module(os.environ.get("CLIENT_PACKAGE", "warp_platform_sdk"))
APIResponseValidationError = package.APIResponseValidationError
APIStatusError = package.APIStatusError
BinaryAPIResponse = importlib.import_module(f"{package.__name__}._response").BinaryAPIResponse

client = getattr(package, os.environ.get("CLIENT_CLASS", "WarpClient"))(
    api_key=os.environ["WARP_API_KEY"],
    base_url=os.environ["WARP_BASE_URL"],
    _strict_response_validation=True,
    max_retries=0,
)


def as_json(value):
    if hasattr(value, "_get_page_items"):
        # A page of a list: its items (the test reads page_info through the API when it needs it).
        return [as_json(item) for item in value._get_page_items()]
    if isinstance(value, BinaryAPIResponse):
        return {"bytes": value.read().decode("utf-8", "replace"), "content_type": value.headers.get("content-type")}
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_unset=True)
    if isinstance(value, list):
        return [as_json(v) for v in value]
    if value is None:
        return None
    if hasattr(value, "__iter__") and not isinstance(value, (str, dict)):
        return [as_json(v) for v in value]
    return value


results = []
for step in json.load(sys.stdin):
    target = client
    for part in step["call"].split("."):
        target = getattr(target, part)
    try:
        results.append({"ok": as_json(target(*step.get("args", []), **step.get("kwargs", {})))})
    except APIResponseValidationError as err:
        results.append({"error": "APIResponseValidationError", "detail": str(err.__cause__), "body": err.body})
    except APIStatusError as err:
        results.append({"error": type(err).__name__, "status": err.status_code, "body": err.body})
print(json.dumps(results))
