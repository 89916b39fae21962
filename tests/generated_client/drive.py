#!/usr/bin/env python3
"""Calls fleetdesk through the client openapi-python-client generated from /openapi.json.

Usage: PYTHONPATH=<where the package is installed> python3 drive.py <base_url> <agent_key> <run_id>

Lists the agent's accounts (GET /accounts) and sends one heartbeat (POST /heartbeat) with the
generated models, then prints one line of JSON: each call's status and what it parsed.
Exits 0 when both calls answered 200 with their typed result, 1 otherwise.
"""

import json
import sys

from fleetdesk_client import AuthenticatedClient
from fleetdesk_client.api.accounts import list_accounts
from fleetdesk_client.api.heartbeat import heartbeat
from fleetdesk_client.models.heartbeat_body import HeartbeatBody


def main() -> int:
    base, key, run_id = sys.argv[1:4]
    client = AuthenticatedClient(base_url=base, token=key, raise_on_unexpected_status=True)
    out: dict = {}
    with client:
        listed = list_accounts.sync_detailed(client=client)
        out["list_accounts"] = {
            "status": int(listed.status_code),
            "parsed": type(listed.parsed).__name__,
            "codes": sorted(a.code for a in getattr(listed.parsed, "accounts", []) or []),
        }
        body = HeartbeatBody.from_dict(
            {"run_id": run_id, "summary": "generated client", "counts": {"drafts": 2}}
        )
        beat = heartbeat.sync_detailed(client=client, body=body)
        out["heartbeat"] = {
            "status": int(beat.status_code),
            "parsed": type(beat.parsed).__name__,
            "body": json.loads(beat.content),
        }
    ok = out["list_accounts"]["status"] == 200 and out["heartbeat"]["status"] == 200
    out["ok"] = ok
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
