"""Verifies fleetdesk's webhook deliveries with the standardwebhooks PyPI package, as a
receiver would: reads [{secret, headers, body}] as JSON from the file named by its argument
and prints {verified, refused} (refused: the signatures the package rejected, with why)."""

import json
import sys

from standardwebhooks.webhooks import Webhook

with open(sys.argv[1], encoding="utf-8") as f:
    cases = json.load(f)
out = {"verified": 0, "refused": []}
for case in cases:
    try:
        Webhook(case["secret"]).verify(case["body"], case["headers"])
        out["verified"] += 1
    except Exception as e:  # the package's WebhookVerificationError, or a parse error
        out["refused"].append(str(e))
print(json.dumps(out))
