"""Prints the newest official client's methods as JSON: ["agent.runs.retrieve", ...].

Walks a `WarpClient`'s resources (its cached properties, which make no request) and lists each
public method, without the raw and streaming response wrappers, so that a test can check that
every method is driven.
"""

import functools
import inspect
import json

from warp_platform_sdk import WarpClient
from warp_platform_sdk._resource import SyncAPIResource

SKIP = {"with_raw_response", "with_streaming_response"}


def walk(obj, prefix, out):
    for name, member in inspect.getmembers(type(obj)):
        if name.startswith("_") or name in SKIP:
            continue
        if isinstance(member, functools.cached_property):
            child = getattr(obj, name)
            if isinstance(child, SyncAPIResource):
                walk(child, f"{prefix}{name}.", out)
        elif inspect.isfunction(member) and isinstance(obj, SyncAPIResource):
            out.append(f"{prefix}{name}")


methods = []
walk(WarpClient(api_key="none", base_url="http://127.0.0.1:9/api/v1"), "", methods)
print(json.dumps(sorted(methods)))
