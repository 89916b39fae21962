"""Schemathesis hooks for fleetdesk's run (tests/integration/schemathesis.rs).

Hypothesis draws short Idempotency-Key values ("0", "00", ...) again and again, so most
schema-valid writes would reuse a key already taken by other content and be answered
422 idempotency_mismatch: right, but the operation's own logic is then never reached.
A schema-valid request gets a key of its own (the drawn key plus a fresh suffix, still
1-200 visible ASCII characters); a negative case keeps the key it was generated with.

A body may repeat a path parameter (`id`) and carry `request_id` in the role of the
Idempotency-Key; each must then equal the path's value and the header, which no JSON Schema
can say across parameters. A schema-valid request repeats them as they are (or, for a
`request_id` without a header, with a fresh suffix of its own, like a drawn header).

CPython 3.11's AST constructor keeps its recursion depth in interpreter-wide state, so two
threads parsing at once (the two workers, when Hypothesis describes a lambda by parsing its
module's source) can fail with "SystemError: AST constructor recursion depth mismatch"
(python/cpython gh-106905). Parsing is made one thread at a time; nothing else is serialized.
"""

import ast
import threading
import uuid

import schemathesis

_parse = ast.parse
_parsing = threading.Lock()


def _parse_alone(*args, **kwargs):
    with _parsing:
        return _parse(*args, **kwargs)


ast.parse = _parse_alone

HEADER = "Idempotency-Key"


@schemathesis.hook
def before_call(context, case, kwargs):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return
    headers = case.headers
    if headers and HEADER in headers:
        drawn = str(headers[HEADER])
        headers[HEADER] = f"{drawn[:160]}-{uuid.uuid4().hex}"
    body = case.body
    if not isinstance(body, dict):
        return
    for name, value in (case.path_parameters or {}).items():
        if name in body:
            body[name] = value
    if "request_id" in body:
        if headers and HEADER in headers:
            body["request_id"] = headers[HEADER]
        else:
            body["request_id"] = f"{str(body['request_id'])[:160]}-{uuid.uuid4().hex}"
