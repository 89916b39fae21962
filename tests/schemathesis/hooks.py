"""Schemathesis hooks for fleetdesk's run (tests/integration/schemathesis.rs).

Hypothesis draws short Idempotency-Key values ("0", "00", ...) again and again, so most
schema-valid writes would reuse a key already taken by other content and be answered
422 idempotency_mismatch: right, but the operation's own logic is then never reached.
A schema-valid request gets a key of its own (the drawn key plus a fresh suffix, still
1-200 visible ASCII characters); a negative case keeps the key it was generated with.
"""

import uuid

import schemathesis

HEADER = "Idempotency-Key"


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers
    if not headers or HEADER not in headers:
        return
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return
    drawn = str(headers[HEADER])
    headers[HEADER] = f"{drawn[:160]}-{uuid.uuid4().hex}"
