//! Prompts and resources: what an agent (or a person) reads at the start of a round, offered
//! the way MCP clients present it. Each is one read operation of the catalogue run through
//! the same pipeline as its tool, for the same caller: a prompt wraps an operation's answer in
//! instructions, a resource is an operation's answer under a URI. Nothing here reads the
//! database by itself.

use crate::{Mcp, RpcCode, rpc_error, rpc_result, strip_result_type};
use fleetdesk_api::pipeline::execute_as;
use fleetdesk_api::{Api, ApiError, Ctx, Invocation};
use fleetdesk_kernel::{ErrorCode, percent};
use fleetdesk_tenancy::Caller;
use rmcp::model::{
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, Prompt,
    PromptArgument, PromptMessage, ReadResourceResult, Resource, ResourceContents,
    ResourceTemplate, Role,
};
use serde_json::{Map, Value, json};

/// The JSON-RPC error of a resource that does not exist (MCP 2025-06-18, Resources).
pub const RESOURCE_NOT_FOUND: RpcCode = RpcCode(-32002);

/// The scheme of every resource URI.
const SCHEME: &str = "fleetdesk://";

/// A resource kind: the answer of one read tool under `fleetdesk://<kind>/{<param>}`.
struct Kind {
    api: Api,
    kind: &'static str,
    /// The tool whose answer the resource is, and the argument the URI's last part fills.
    tool: &'static str,
    param: &'static str,
    name: &'static str,
    description: &'static str,
}

const KINDS: &[Kind] = &[
    Kind {
        api: Api::Agent,
        kind: "personas",
        tool: "get_persona",
        param: "code",
        name: "persona",
        description: "The persona behind one of your accounts, by account code: bio, voice, \
                      speech rules, decided facts, cast and images (the tool get_persona).",
    },
    Kind {
        api: Api::Agent,
        kind: "wiki",
        tool: "wiki_get",
        param: "id",
        name: "knowledge-base entry",
        description: "One knowledge-base entry by id: its text, sources and versions (the \
                      tool wiki_get).",
    },
    Kind {
        api: Api::Personal,
        kind: "posts",
        tool: "get_post",
        param: "id",
        name: "post",
        description: "One post by id, with its media links and review record (the tool \
                      get_post).",
    },
];

/// A prompt: the answer of one read tool, wrapped in what to do with it.
struct PromptKind {
    api: Api,
    name: &'static str,
    description: &'static str,
    tool: &'static str,
    /// Optional arguments, passed to the tool as they are.
    arguments: &'static [(&'static str, &'static str)],
    /// What the answer is, before it.
    lead: &'static str,
    /// What to do with it, after it.
    steps: &'static str,
}

const PROMPTS: &[PromptKind] = &[
    PromptKind {
        api: Api::Agent,
        name: "todays_work",
        description: "Plan a round: the day's work of your accounts (the tool work_today) with \
                      the order to go through it.",
        tool: "work_today",
        arguments: &[(
            "date",
            "The day to plan, YYYY-MM-DD; today in each account's market when left out.",
        )],
        lead: "This is your day's work in fleetdesk, as the tool work_today answers it:",
        steps: "Go through it in this order. 1. Report what your tools published or failed \
                (report_posts) and the counters you read (report_metrics). 2. Rewrite the \
                drafts people sent back (list_redo, update_draft). 3. Act on the follow-ups of \
                human decisions and report them done (complete_issue). 4. Claim the task cards \
                meant for you and work them (claim_task, report_task, finish_task or \
                fail_task). 5. For each account still missing posts, read its persona \
                (get_persona) and the knowledge base (wiki_search), then write drafts for review \
                (submit_draft). Never spend money on your own: ad changes are proposals a \
                person approves (propose_ad_change). End the round with heartbeat.",
    },
    PromptKind {
        api: Api::Personal,
        name: "review_queue",
        description: "Review the posts waiting for you (the tool review_queue), one by one.",
        tool: "review_queue",
        arguments: &[],
        lead: "These posts wait for your review in fleetdesk, as the tool review_queue answers:",
        steps: "For each post, oldest planned first: read it whole with its media (get_post), \
                then approve it, send it back with a comment that says what to change, or ask \
                for a rewrite (review_post). Say what you decided for each.",
    },
];

fn api_of(caller: &Caller) -> Api {
    match caller {
        Caller::Agent(_) => Api::Agent,
        Caller::Member(_) => Api::Personal,
    }
}

/// The JSON-RPC error answering an operation's refusal: a missing object, or one that is not
/// the caller's, is "resource not found", arguments the tool refuses are invalid params,
/// anything else an internal error, each with the service's error body as `data`.
fn refused(id: Value, e: &ApiError, request_id: &str) -> Value {
    let code = match e.code {
        ErrorCode::NotFound | ErrorCode::Forbidden => RESOURCE_NOT_FOUND,
        ErrorCode::InvalidRequest => RpcCode::INVALID_PARAMS,
        _ => RpcCode::INTERNAL_ERROR,
    };
    rpc_error(id, code, e.message.clone(), Some(e.body(request_id)))
}

fn result(id: Value, value: impl serde::Serialize) -> Value {
    let mut v = serde_json::to_value(value).unwrap_or(Value::Null);
    strip_result_type(&mut v);
    rpc_result(id, v)
}

impl Mcp {
    /// Runs the read tool `tool` of the caller's API with `arguments`, through the pipeline
    /// (access, input, the handler): its answer as JSON.
    async fn read_tool(
        &self,
        ctx: &Ctx,
        caller: &Caller,
        tool: &str,
        arguments: Map<String, Value>,
        base_url: Option<String>,
    ) -> Result<Value, ApiError> {
        let entry = self
            .find(api_of(caller), tool)
            .ok_or_else(|| ApiError::not_found(format!("no tool {tool} for this key")))?;
        let mut arguments = arguments;
        let route = entry.route(&mut arguments)?;
        let (args, _) = route.split(arguments)?;
        let invocation = Invocation {
            bearer: None,
            idempotency_key: None,
            args,
            input_error: None,
            base_url,
        };
        let outcome = execute_as(ctx, route.op.as_ref(), caller.clone(), invocation).await?;
        serde_json::from_str(outcome.body.get()).map_err(|e| ApiError::internal(e.into()))
    }

    pub(crate) fn list_prompts(&self, id: Value, caller: &Caller) -> Value {
        let prompts = PROMPTS
            .iter()
            .filter(|p| p.api == api_of(caller) && self.may_call(caller, p.tool))
            .map(|p| {
                let arguments = p
                    .arguments
                    .iter()
                    .map(|(name, about)| {
                        PromptArgument::new(*name)
                            .with_description(*about)
                            .with_required(false)
                    })
                    .collect();
                Prompt::new(p.name, Some(p.description), Some(arguments))
            })
            .collect();
        result(id, ListPromptsResult::with_all_items(prompts))
    }

    pub(crate) async fn get_prompt(
        &self,
        ctx: &Ctx,
        id: Value,
        caller: &Caller,
        params: &Value,
        base_url: Option<String>,
        request_id: &str,
    ) -> Value {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        let Some(prompt) = PROMPTS
            .iter()
            .find(|p| p.name == name && p.api == api_of(caller))
        else {
            let names: Vec<&str> = (PROMPTS.iter())
                .filter(|p| p.api == api_of(caller))
                .map(|p| p.name)
                .collect();
            let message = format!("unknown prompt {name:?}; prompts: {}", names.join(", "));
            return rpc_error(id, RpcCode::INVALID_PARAMS, message, None);
        };
        let mut arguments = Map::new();
        if let Some(given) = params.get("arguments").and_then(Value::as_object) {
            for (name, value) in given {
                if !prompt.arguments.iter().any(|(known, _)| known == name) {
                    let message = format!("{name}: is not an argument of {}", prompt.name);
                    return rpc_error(id, RpcCode::INVALID_PARAMS, message, None);
                }
                arguments.insert(name.clone(), value.clone());
            }
        }
        match self
            .read_tool(ctx, caller, prompt.tool, arguments, base_url)
            .await
        {
            Ok(answer) => {
                let text = format!(
                    "{}\n\n```json\n{}\n```\n\n{}",
                    prompt.lead,
                    serde_json::to_string_pretty(&answer).unwrap_or_default(),
                    prompt.steps
                );
                let messages = vec![PromptMessage::new_text(Role::User, text)];
                result(
                    id,
                    GetPromptResult::new(messages).with_description(prompt.description),
                )
            }
            Err(e) => refused(id, &e, request_id),
        }
    }

    /// Resources the caller reads most: an agent's personas (one per account) and the first
    /// page of its knowledge base; a person's review queue. The templates reach the rest.
    pub(crate) async fn list_resources(
        &self,
        ctx: &Ctx,
        id: Value,
        caller: &Caller,
        base_url: Option<String>,
        request_id: &str,
    ) -> Value {
        let listed = match api_of(caller) {
            Api::Agent => self.agent_resources(ctx, caller, base_url).await,
            Api::Personal => self.personal_resources(ctx, caller, base_url).await,
        };
        match listed {
            Ok(resources) => result(id, ListResourcesResult::with_all_items(resources)),
            Err(e) => refused(id, &e, request_id),
        }
    }

    async fn agent_resources(
        &self,
        ctx: &Ctx,
        caller: &Caller,
        base_url: Option<String>,
    ) -> Result<Vec<Resource>, ApiError> {
        let mut resources = Vec::new();
        if self.may_call(caller, "get_persona") {
            let accounts = (self.read_tool(ctx, caller, "list_accounts", Map::new(), None)).await?;
            for account in accounts["accounts"].as_array().into_iter().flatten() {
                let Some(code) = account["code"].as_str() else {
                    continue;
                };
                let platform = account["platform"].as_str().unwrap_or("");
                resources.push(
                    Resource::new(
                        format!("{SCHEME}personas/{}", percent::encode(code)),
                        format!("persona of {code}"),
                    )
                    .with_description(format!("The persona behind {code} ({platform})"))
                    .with_mime_type("application/json"),
                );
            }
        }
        if self.may_call(caller, "wiki_index") {
            let first = json!({"limit": 50})
                .as_object()
                .cloned()
                .unwrap_or_default();
            let index = self
                .read_tool(ctx, caller, "wiki_index", first, base_url)
                .await?;
            for entry in index["entries"].as_array().into_iter().flatten() {
                let (Some(entry_id), Some(title)) = (entry["id"].as_str(), entry["title"].as_str())
                else {
                    continue;
                };
                let mut resource =
                    Resource::new(format!("{SCHEME}wiki/{}", percent::encode(entry_id)), title)
                        .with_mime_type("application/json");
                if let Some(summary) = entry["summary"].as_str().filter(|s| !s.is_empty()) {
                    resource = resource.with_description(summary);
                }
                resources.push(resource);
            }
        }
        Ok(resources)
    }

    async fn personal_resources(
        &self,
        ctx: &Ctx,
        caller: &Caller,
        base_url: Option<String>,
    ) -> Result<Vec<Resource>, ApiError> {
        if !self.may_call(caller, "review_queue") {
            return Ok(Vec::new());
        }
        let queue = self
            .read_tool(ctx, caller, "review_queue", Map::new(), base_url)
            .await?;
        Ok(queue["posts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|post| {
                let post_id = post["id"].as_str()?;
                let code = post["account"]["code"]
                    .as_str()
                    .or_else(|| post["code"].as_str())
                    .unwrap_or("");
                Some(
                    Resource::new(
                        format!("{SCHEME}posts/{}", percent::encode(post_id)),
                        format!("post {post_id} {code}").trim_end().to_owned(),
                    )
                    .with_mime_type("application/json"),
                )
            })
            .collect())
    }

    pub(crate) fn list_resource_templates(&self, id: Value, caller: &Caller) -> Value {
        let templates = KINDS
            .iter()
            .filter(|k| k.api == api_of(caller) && self.may_call(caller, k.tool))
            .map(|k| {
                ResourceTemplate::new(format!("{SCHEME}{}/{{{}}}", k.kind, k.param), k.name)
                    .with_description(k.description)
                    .with_mime_type("application/json")
            })
            .collect();
        result(id, ListResourceTemplatesResult::with_all_items(templates))
    }

    pub(crate) async fn read_resource(
        &self,
        ctx: &Ctx,
        id: Value,
        caller: &Caller,
        params: &Value,
        base_url: Option<String>,
        request_id: &str,
    ) -> Value {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return rpc_error(id, RpcCode::INVALID_PARAMS, "params.uri is required", None);
        };
        let not_found = |id| {
            rpc_error(
                id,
                RESOURCE_NOT_FOUND,
                format!("no resource {uri}"),
                Some(json!({"uri": uri})),
            )
        };
        let Some((kind, value)) = uri.strip_prefix(SCHEME).and_then(|r| r.split_once('/')) else {
            return not_found(id);
        };
        let Some(kind) = KINDS
            .iter()
            .find(|k| k.kind == kind && k.api == api_of(caller))
        else {
            return not_found(id);
        };
        let Some(value) = percent::decode(value).filter(|v| !v.is_empty()) else {
            return not_found(id);
        };
        let mut arguments = Map::new();
        arguments.insert(kind.param.to_owned(), Value::String(value));
        match self
            .read_tool(ctx, caller, kind.tool, arguments, base_url)
            .await
        {
            Ok(answer) => {
                let text = answer.to_string();
                let contents =
                    vec![ResourceContents::text(text, uri).with_mime_type("application/json")];
                result(id, ReadResourceResult::new(contents))
            }
            Err(e) => refused(id, &e, request_id),
        }
    }

    /// What the caller's key finds besides tools, for the instructions: the prompts and the
    /// resource templates listed for it, as `prompts/list` and `resources/templates/list` list
    /// them.
    pub(crate) fn library_note(&self, caller: &Caller) -> String {
        let prompts: Vec<&str> = PROMPTS
            .iter()
            .filter(|p| p.api == api_of(caller) && self.may_call(caller, p.tool))
            .map(|p| p.name)
            .collect();
        let resources: Vec<String> = KINDS
            .iter()
            .filter(|k| k.api == api_of(caller) && self.may_call(caller, k.tool))
            .map(|k| format!("{SCHEME}{}/{{{}}} ({})", k.kind, k.param, k.tool))
            .collect();
        let mut note = String::new();
        if !prompts.is_empty() {
            note.push_str(&format!("Prompts start a round: {}. ", prompts.join(", ")));
        }
        if !resources.is_empty() {
            note.push_str(&format!(
                "Resources are read tools' answers: {}.",
                resources.join(", ")
            ));
        }
        note.trim_end().to_owned()
    }

    /// Whether the caller's key may use `tool` (the tool is listed for it).
    fn may_call(&self, caller: &Caller, tool: &str) -> bool {
        self.find(api_of(caller), tool)
            .is_some_and(|t| t.routes.iter().any(|r| caller.may(r.op.spec().access)))
    }
}
