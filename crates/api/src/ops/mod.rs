//! The operations, one module per area of the specification.

pub mod accounts;
pub mod ad_changes;
pub mod ad_picks;
pub mod ads;
pub mod common;
pub mod community;
pub mod cron;
pub mod decisions;
pub mod drafts;
pub mod events;
pub mod inventory;
pub mod keys;
pub mod media;
pub mod metrics;
pub mod personal;
pub mod personas;
pub mod posts;
pub mod relay;
pub mod reports;
pub mod tasks;
pub mod today;
pub mod webhooks;
pub mod wiki;
pub mod wiki_sources;

use serde_json::Value;

/// JSON Schema keywords utoipa cannot derive from a type (conditional requirements, a field no
/// value may take yet), by component name. The describer merges them into the named schema;
/// the handlers and the domain enforce the same rules.
///
/// Rules between query parameters, which no OpenAPI parameter list states, are the tool's own:
/// [`tool_rules`].
pub fn schema_rules(component: &str) -> Option<Value> {
    match component {
        "StateReportBody" => Some(accounts::state_report_rules()),
        "SubmitDraftBody" => Some(drafts::submit_rules()),
        "UpdateDraftBody" => Some(drafts::update_rules()),
        "CreateUploadBody" => Some(media::upload_rules()),
        "ReportItemIn" => Some(posts::report_item_rules()),
        "MetricsBody" => Some(posts::metrics_rules()),
        "PostMetricsIn" => Some(posts::post_metrics_rules()),
        "RelayTransitionBody" | "TransitionBody" => Some(posts::comment_rules()),
        "EvidenceIn" => Some(decisions::evidence_rules()),
        "ProposeFactBody" => Some(personas::proposal_rules()),
        "CreatePersonaBody" => Some(personas::create_persona_rules()),
        "TaskTargetIn" => Some(tasks::target_rules()),
        "RelayTaskBody" => Some(tasks::relay_task_rules()),
        "ProposeWikiBody" => Some(wiki::propose_rules()),
        "WikiSourceIn" => Some(wiki::source_rules()),
        "QuoteBody" => Some(ads::quote_rules()),
        "ProposeBody" => Some(ad_changes::propose_rules()),
        "ReplayBody" => Some(webhooks::replay_rules()),
        _ => None,
    }
}

/// Rules between a tool's query arguments (JSON Schema over the tool's arguments), stated in
/// the tool's description beside its flat `inputSchema`
/// ([`crate::describe::tool_input_rules`]); the handler enforces them.
pub fn tool_rules(tool: &str) -> Option<Value> {
    match tool {
        "wiki_get" | "kb_entry" => Some(wiki::get_rules()),
        _ => None,
    }
}
