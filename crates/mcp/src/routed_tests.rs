//! A tool that stands for several operations, routed by `action`: listing, routing, scopes
//! and the startup checks, over small fake operations.

// The fake inputs are parsed, never read.
#![allow(dead_code)]

use super::*;
use fleetdesk_api::op::{HttpMethod, Reply, operation};
use fleetdesk_api::{Nothing, Req};
use fleetdesk_tenancy::{AgentCaller, AgentRole, Scope};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

#[derive(Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
struct DecisionPath {
    id: String,
}

#[derive(Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
struct ResolveBody {
    choice: String,
    note: Option<String>,
}

#[derive(Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
struct DismissBody {
    note: Option<String>,
}

/// `note` as a number: disagrees with the other operations' `note`.
#[derive(Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
struct NumberNoteBody {
    note: Option<i64>,
}

/// Takes an argument called like the routing argument.
#[derive(Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
struct ActionBody {
    action: String,
}

#[derive(Serialize, ToSchema)]
struct Resolved {
    resolved: bool,
}

#[derive(Serialize, ToSchema)]
struct Dismissed {
    dismissed: bool,
}

async fn resolve(
    _: Ctx,
    _: Caller,
    _: Req<DecisionPath, Nothing, ResolveBody>,
) -> Result<Reply<Resolved>, ApiError> {
    Ok(Reply::ok(Resolved { resolved: true }))
}

async fn dismiss(
    _: Ctx,
    _: Caller,
    _: Req<DecisionPath, Nothing, DismissBody>,
) -> Result<Reply<Dismissed>, ApiError> {
    Ok(Reply::ok(Dismissed { dismissed: true }))
}

async fn number_note(
    _: Ctx,
    _: Caller,
    _: Req<DecisionPath, Nothing, NumberNoteBody>,
) -> Result<Reply<Dismissed>, ApiError> {
    Ok(Reply::ok(Dismissed { dismissed: true }))
}

async fn with_action(
    _: Ctx,
    _: Caller,
    _: Req<Nothing, Nothing, ActionBody>,
) -> Result<Reply<Dismissed>, ApiError> {
    Ok(Reply::ok(Dismissed { dismissed: true }))
}

async fn plain(
    _: Ctx,
    _: Caller,
    _: Req<Nothing, Nothing, Nothing>,
) -> Result<Reply<Dismissed>, ApiError> {
    Ok(Reply::ok(Dismissed { dismissed: true }))
}

fn spec(
    path: &'static str,
    scope: Scope,
    tool: &'static str,
    action: Option<&'static str>,
) -> OpSpec {
    let spec = OpSpec::agent(HttpMethod::Post, path, scope)
        .tool(tool)
        .idempotent()
        .summary("Decide");
    match action {
        Some(action) => spec.tool_action(action),
        None => spec,
    }
}

/// `decide_issue` routed to resolve (accounts:write) and dismiss (community:write);
/// `settle` routed to two operations a community agent may not use; `plain` alone.
fn fake_ops() -> Vec<Arc<dyn ErasedOp>> {
    vec![
        operation(
            spec(
                "/decisions/{id}/resolve",
                Scope::AccountsWrite,
                "decide_issue",
                Some("resolve"),
            ),
            resolve,
        )
        .into(),
        operation(spec("/plain", Scope::AccountsRead, "plain", None), plain).into(),
        operation(
            spec(
                "/decisions/{id}/dismiss",
                Scope::CommunityWrite,
                "decide_issue",
                Some("dismiss"),
            ),
            dismiss,
        )
        .into(),
        operation(
            spec("/settle/{id}/a", Scope::AccountsRead, "settle", Some("a")),
            dismiss,
        )
        .into(),
        operation(
            spec("/settle/{id}/b", Scope::AccountsWrite, "settle", Some("b")),
            dismiss,
        )
        .into(),
    ]
}

fn mcp(ops: Vec<Arc<dyn ErasedOp>>) -> Mcp {
    Mcp::new(Arc::new(ops))
}

fn agent(role: AgentRole) -> Caller {
    Caller::Agent(AgentCaller {
        key_id: Uuid::nil(),
        agent_id: Uuid::nil(),
        agent_name: "a".into(),
        role,
        workspace_id: Uuid::nil(),
        organization_id: Uuid::nil(),
        accounts_revision: 0,
        tasks_revision: 0,
    })
}

/// The tools a caller sees, by name.
fn listed(mcp: &Mcp, caller: &Caller) -> Vec<(String, Value)> {
    let list = serde_json::to_value(mcp.list(caller)).expect("json");
    list["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| (t["name"].as_str().expect("name").to_owned(), t.clone()))
        .collect()
}

fn arguments(v: Value) -> Map<String, Value> {
    v.as_object().expect("an object").clone()
}

#[test]
fn a_routed_tool_is_listed_once_with_the_action_enum_and_merged_arguments() {
    let tools = listed(&mcp(fake_ops()), &agent(AgentRole::Operator));
    let names: Vec<&str> = tools.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["decide_issue", "plain", "settle"]);
    let tool = &tools[0].1;
    let input = &tool["inputSchema"];
    assert_eq!(
        input["properties"]["action"],
        json!({"type": "string", "enum": ["resolve", "dismiss"],
               "description": "Which of the tool's operations to run (see the tool's description). `resolve` also needs `choice`."}),
        "{input}"
    );
    for prop in ["id", "choice", "note", "request_id"] {
        assert!(input["properties"].get(prop).is_some(), "{prop}: {input}");
    }
    // Required by both: action and id; choice only when resolving.
    assert_eq!(input["required"], json!(["action", "id"]), "{input}");
    // One flat object at the root: the per-action requirement is in the action's description.
    for key in input.as_object().unwrap().keys() {
        assert!(
            fleetdesk_api::describe::TOOL_INPUT_ROOT.contains(&key.as_str()),
            "{key}: {input}"
        );
    }
    assert_eq!(input["additionalProperties"], false, "{input}");
    // Different success bodies: either one.
    let output = &tool["outputSchema"];
    assert_eq!(output["type"], "object", "{output}");
    let any_of = output["anyOf"].as_array().expect("anyOf");
    assert_eq!(any_of.len(), 2, "{output}");
    assert!(
        any_of[0]["properties"].get("resolved").is_some(),
        "{output}"
    );
    assert!(
        any_of[1]["properties"].get("dismissed").is_some(),
        "{output}"
    );
    let description = tool["description"].as_str().expect("description");
    assert!(
        description.contains("`action: dismiss` (POST /api/agent/v1/decisions/{id}/dismiss)"),
        "{description}"
    );
    // The same outputs give the common schema; an unrouted tool has no action.
    let settle = &tools[2].1;
    assert_eq!(
        settle["outputSchema"]["properties"]["dismissed"]["type"],
        "boolean"
    );
    assert!(settle["outputSchema"].get("anyOf").is_none(), "{settle}");
    assert!(
        tools[1].1["inputSchema"]["properties"]
            .get("action")
            .is_none()
    );
}

#[test]
fn a_routed_tool_is_listed_when_the_caller_may_use_one_of_its_operations() {
    // community:write allows dismiss only; neither settle operation nor plain.
    let tools = listed(&mcp(fake_ops()), &agent(AgentRole::Community));
    let names: Vec<&str> = tools.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["decide_issue"]);
    // Listed whole: the action the caller may not use is answered 403 when called.
    assert_eq!(
        tools[0].1["inputSchema"]["properties"]["action"]["enum"],
        json!(["resolve", "dismiss"])
    );
}

#[test]
fn the_action_picks_the_operation_and_is_not_passed_on() {
    let mcp = mcp(fake_ops());
    let entry = mcp.find(Api::Agent, "decide_issue").expect("tool");
    for (action, path) in [
        ("resolve", "/decisions/{id}/resolve"),
        ("dismiss", "/decisions/{id}/dismiss"),
    ] {
        let mut args = arguments(
            json!({"action": action, "id": "d1", "choice": "x", "note": "n",
                                        "request_id": "r-1"}),
        );
        if action == "dismiss" {
            args.remove("choice");
        }
        let route = entry.route(&mut args).expect("routed");
        assert_eq!(route.op.spec().path, path);
        assert!(!args.contains_key("action"));
        let (split, request_id) = route.split(args).expect("split");
        assert_eq!(request_id.as_deref(), Some("r-1"));
        assert_eq!(split.path, arguments(json!({"id": "d1"})));
        // The operation's body refuses unknown fields: `action` would be one.
        assert!(route.op.prepare(&split).is_ok(), "{action}");
    }
    // An argument of the other operation reaches this one and is refused, naming it.
    let mut args = arguments(json!({"action": "dismiss", "id": "d1", "choice": "x"}));
    let route = entry.route(&mut args).expect("routed");
    let (split, _) = route.split(args).expect("split");
    let err = route.op.prepare(&split).err().expect("refused");
    assert_eq!(err.field.as_deref(), Some("choice"), "{}", err.message);
}

#[test]
fn the_scope_checked_is_the_routed_operations() {
    // The pipeline checks the access of the operation it is given: the routed one.
    let mcp = mcp(fake_ops());
    let entry = mcp.find(Api::Agent, "decide_issue").expect("tool");
    let community = agent(AgentRole::Community);
    let operator = agent(AgentRole::Operator);
    let mut args = arguments(json!({"action": "resolve", "id": "d1", "choice": "x"}));
    let resolve = entry.route(&mut args).expect("routed");
    assert!(!community.may(resolve.op.spec().access));
    assert!(operator.may(resolve.op.spec().access));
    let mut args = arguments(json!({"action": "dismiss", "id": "d1"}));
    let dismiss = entry.route(&mut args).expect("routed");
    assert!(community.may(dismiss.op.spec().access));
    assert!(!operator.may(dismiss.op.spec().access));
}

#[test]
fn a_missing_or_unknown_action_is_an_invalid_argument_naming_it() {
    let mcp = mcp(fake_ops());
    let entry = mcp.find(Api::Agent, "decide_issue").expect("tool");
    for (args, message) in [
        (
            json!({"id": "d1"}),
            "action: is required: one of resolve, dismiss",
        ),
        (
            json!({"id": "d1", "action": null}),
            "action: is required: one of resolve, dismiss",
        ),
        (
            json!({"id": "d1", "action": "approve"}),
            "action: must be one of resolve, dismiss",
        ),
        (
            json!({"id": "d1", "action": 1}),
            "action: must be a string, one of resolve, dismiss",
        ),
    ] {
        let err = entry
            .route(&mut arguments(args.clone()))
            .err()
            .expect("refused");
        assert_eq!(err.field.as_deref(), Some("action"), "{args}");
        assert_eq!(err.message, message, "{args}");
        assert_eq!(err.code, ErrorCode::InvalidRequest, "{args}");
    }
    // An unrouted tool takes `action` as an ordinary (here unknown) argument.
    let plain = mcp.find(Api::Agent, "plain").expect("tool");
    let mut args = arguments(json!({"action": "x"}));
    let route = plain.route(&mut args).expect("one operation");
    assert!(args.contains_key("action"));
    let (split, _) = route.split(args).expect("split");
    let err = route.op.prepare(&split).err().expect("refused");
    assert_eq!(err.field.as_deref(), Some("action"), "{}", err.message);
}

#[test]
#[should_panic(expected = "MCP tool decide_issue stands for several operations")]
fn operations_sharing_a_tool_without_actions_refuse_to_start() {
    mcp(vec![
        operation(
            spec(
                "/decisions/{id}/resolve",
                Scope::AccountsWrite,
                "decide_issue",
                None,
            ),
            resolve,
        )
        .into(),
        operation(
            spec(
                "/decisions/{id}/dismiss",
                Scope::AccountsWrite,
                "decide_issue",
                None,
            ),
            dismiss,
        )
        .into(),
    ]);
}

#[test]
#[should_panic(expected = "MCP tool decide_issue stands for several operations")]
fn one_operation_without_an_action_among_routed_ones_refuses_to_start() {
    mcp(vec![
        operation(
            spec(
                "/decisions/{id}/resolve",
                Scope::AccountsWrite,
                "decide_issue",
                Some("resolve"),
            ),
            resolve,
        )
        .into(),
        operation(
            spec(
                "/decisions/{id}/dismiss",
                Scope::AccountsWrite,
                "decide_issue",
                None,
            ),
            dismiss,
        )
        .into(),
    ]);
}

#[test]
#[should_panic(expected = "have tool_action \"resolve\"")]
fn two_operations_with_the_same_action_refuse_to_start() {
    mcp(vec![
        operation(
            spec(
                "/decisions/{id}/resolve",
                Scope::AccountsWrite,
                "decide_issue",
                Some("resolve"),
            ),
            resolve,
        )
        .into(),
        operation(
            spec(
                "/decisions/{id}/dismiss",
                Scope::AccountsWrite,
                "decide_issue",
                Some("resolve"),
            ),
            dismiss,
        )
        .into(),
    ]);
}

#[test]
#[should_panic(
    expected = "argument `note` has different schemas in agent POST /decisions/{id}/resolve and agent POST /decisions/{id}/note"
)]
fn a_shared_argument_with_different_schemas_refuses_to_start() {
    mcp(vec![
        operation(
            spec(
                "/decisions/{id}/resolve",
                Scope::AccountsWrite,
                "decide_issue",
                Some("resolve"),
            ),
            resolve,
        )
        .into(),
        operation(
            spec(
                "/decisions/{id}/note",
                Scope::AccountsWrite,
                "decide_issue",
                Some("note"),
            ),
            number_note,
        )
        .into(),
    ]);
}

#[test]
#[should_panic(expected = "has its own argument `action`")]
fn an_operation_with_its_own_action_argument_cannot_be_routed() {
    mcp(vec![
        operation(
            spec("/a", Scope::AccountsWrite, "decide_issue", Some("a")),
            with_action,
        )
        .into(),
        operation(
            spec(
                "/decisions/{id}/dismiss",
                Scope::AccountsWrite,
                "decide_issue",
                Some("dismiss"),
            ),
            dismiss,
        )
        .into(),
    ]);
}

#[test]
fn the_catalogue_lists_every_tool_once() {
    let ops = fleetdesk_api::catalogue();
    let mcp = mcp(ops.clone());
    for op in &ops {
        let spec = op.spec();
        if let Some(name) = spec.tool {
            let entry = mcp.find(spec.api, name).expect("listed");
            assert!(
                entry.routes.iter().any(|r| Arc::ptr_eq(&r.op, op)),
                "{} is not reachable through {name}",
                spec.id()
            );
        }
    }
    let mut names: Vec<(Api, String)> = mcp
        .tools
        .iter()
        .map(|t| (t.api, t.tool.name.to_string()))
        .collect();
    let count = names.len();
    names.sort_by(|a, b| (a.0.as_str(), &a.1).cmp(&(b.0.as_str(), &b.1)));
    names.dedup();
    assert_eq!(names.len(), count, "a tool name is listed twice");
}
