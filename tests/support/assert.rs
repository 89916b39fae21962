//! Assertions on the service's answers, shared by every test file.

use crate::Response;
use serde_json::Value;

/// A success answer (2xx): its JSON body.
#[track_caller]
pub fn ok(res: &Response) -> Value {
    assert!(
        (200..300).contains(&res.status),
        "expected 2xx, got {}: {}",
        res.status,
        res.text()
    );
    res.json()
}

/// `"{case}: "`, or nothing without a case: the start of a failure message.
pub fn case_prefix(case: &str) -> String {
    if case.is_empty() {
        String::new()
    } else {
        format!("{case}: ")
    }
}

/// An error answer: the status, the code, a non-empty message and a `request_id` equal to the
/// `X-Request-Id` header. Returns the body. Every failure message starts with `case`.
#[track_caller]
pub fn assert_error_in(case: &str, res: &Response, status: u16, code: &str) -> Value {
    let at = case_prefix(case);
    assert_eq!(
        res.status,
        status,
        "{at}expected {status} {code}, body: {}",
        res.text()
    );
    let body = res.json();
    assert_eq!(body["code"].as_str(), Some(code), "{at}body: {body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{at}an error has a message: {body}"
    );
    let rid = res
        .header("x-request-id")
        .expect("X-Request-Id header on an error");
    assert!(!rid.is_empty(), "{at}empty X-Request-Id");
    assert_eq!(
        body["request_id"].as_str(),
        Some(rid),
        "{at}request_id must equal X-Request-Id: {body}"
    );
    body
}

/// [`assert_error_in`] without a case name.
#[track_caller]
pub fn assert_error(res: &Response, status: u16, code: &str) -> Value {
    assert_error_in("", res, status, code)
}

/// The `result` of a `tools/call` answer that must be a tool result (a success, or a REST error
/// with `isError: true`), with its REST body parsed from the text content under `body`. A
/// success carries the same body as `structuredContent`; an error carries none, since the error
/// body does not match the tool's outputSchema.
#[track_caller]
pub fn tool_result(name: &str, msg: &Value) -> Value {
    assert!(msg.get("error").is_none(), "{name}: JSON-RPC error {msg}");
    let mut result = msg["result"].clone();
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{name}: no text content: {result}"));
    let body: Value = serde_json::from_str(text).expect("the text content is JSON");
    if result["isError"] == true {
        assert!(
            result.get("structuredContent").is_none(),
            "{name}: {result}"
        );
    } else {
        assert_eq!(body, result["structuredContent"], "{name}: {result}");
    }
    result["body"] = body;
    result
}

/// The statements an instance adds to a request when its rate-limit tokens for the key ran
/// out: read the key's grants, write the new ones. A key's first request leases one token, the
/// next two, then four and so on while they are spent within a second.
pub const LEASE_TRIPS: u32 = 2;

/// A request's round trips without a lease's statements, when `trips` is `plain` plus a lease.
pub fn plain_trips(trips: u32, plain: u32) -> u32 {
    if trips == plain + LEASE_TRIPS {
        plain
    } else {
        trips
    }
}
