"""Schemathesis hooks for fleetdesk's run (tests/integration/schemathesis.rs).

Hypothesis draws short Idempotency-Key values ("0", "00", ...) again and again, so most
schema-valid writes would reuse a key already taken by other content and be answered
422 idempotency_mismatch: right, but the operation's own logic is then never reached.
A schema-valid request gets a key of its own (the drawn key plus a fresh suffix, still
1-200 visible ASCII characters); a negative case keeps the key it was generated with.

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
    headers = case.headers
    if not headers or HEADER not in headers:
        return
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return
    drawn = str(headers[HEADER])
    headers[HEADER] = f"{drawn[:160]}-{uuid.uuid4().hex}"
