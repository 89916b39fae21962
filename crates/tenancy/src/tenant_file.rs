//! The tenant file of `fleetdesk admin apply FILE`: a declarative description of
//! organizations, workspaces, projects, members, agents, personas and accounts.
//!
//! Objects are matched by name (accounts by code and platform) so applying the same file
//! again changes nothing that exists. `keys: N` asks that the principal hold at least N valid
//! keys; only the missing ones are issued, and only those are printed.

use crate::roles::{AgentRole, MemberRole};
use fleetdesk_ads::Marketplace;
use fleetdesk_kernel::persona::FactCategory;
use fleetdesk_kernel::{AccountCode, Market, Platform};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantFile {
    #[serde(default)]
    pub platform_admins: Vec<PersonSpec>,
    #[serde(default)]
    pub organizations: Vec<OrganizationSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonSpec {
    pub email: String,
    pub name: String,
    #[serde(default)]
    pub keys: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrganizationSpec {
    pub name: String,
    #[serde(default)]
    pub monthly_credit_limit: i64,
    /// true stops paid research (approvals are refused) until a file says false again.
    #[serde(default)]
    pub suspended: bool,
    /// Credits per research item found, by price key; absent keys cost 1.
    #[serde(default)]
    pub prices: Prices,
    /// How agents' wiki proposals land: canon at once (`auto`, a new organization's default)
    /// or as drafts a person reviews. Absent: the stored setting stays.
    pub wiki_review: Option<WikiReview>,
    /// Synonyms every search of the organization's knowledge base knows: each a line of two or
    /// more names joined by `=` (`"A醇 = 視黃醇"`), as a glossary entry declares them
    /// (`fleetdesk_wiki::aliases`). Absent: the stored ones stay; `[]` clears them.
    pub wiki_synonyms: Option<Vec<String>>,
    #[serde(default)]
    pub members: Vec<MemberSpec>,
    #[serde(default)]
    pub workspaces: Vec<WorkspaceSpec>,
}

/// An organization's `prices`: credits per research item found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    #[serde(default = "one_credit")]
    pub ad_product_brief: i64,
    #[serde(default = "one_credit")]
    pub ad_topic_keyword: i64,
}

fn one_credit() -> i64 {
    1
}

impl Default for Prices {
    fn default() -> Self {
        Prices {
            ad_product_brief: 1,
            ad_topic_keyword: 1,
        }
    }
}

fleetdesk_kernel::text_enum! {
    /// An organization's `wiki_review`.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum WikiReview {
        #[default]
        Auto => "auto",
        Manual => "manual",
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemberSpec {
    pub email: String,
    pub name: String,
    pub role: MemberRole,
    #[serde(default)]
    pub review: bool,
    #[serde(default)]
    pub keys: u32,
    /// true marks the member as having left the organization: their personal keys stop
    /// working. false (the default) keeps or brings them back.
    #[serde(default)]
    pub left: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceSpec {
    pub name: String,
    #[serde(default)]
    pub client_review: bool,
    #[serde(default)]
    pub ads_enabled: bool,
    /// The marketplace a bare item id in ad research is read on (`shopee` when absent).
    pub marketplace: Option<String>,
    /// true archives the workspace (its agent keys stop working); false restores it.
    pub archived: Option<bool>,
    #[serde(default)]
    pub projects: Vec<ProjectSpec>,
    #[serde(default)]
    pub agents: Vec<AgentSpec>,
    #[serde(default)]
    pub personas: Vec<PersonaSpec>,
    #[serde(default)]
    pub community_spaces: Vec<CommunitySpaceSpec>,
    #[serde(default)]
    pub products: Vec<ProductSpec>,
    #[serde(default)]
    pub wiki_sources: Vec<WikiSourceSpec>,
    /// The Meta ad accounts whose ads the service syncs and changes (with `ads_enabled`).
    #[serde(default)]
    pub ad_accounts: Vec<AdAccountSpec>,
    /// The workspace's monthly ad budget: resumes and raises past it are refused.
    pub monthly_ad_cap: Option<AdCapSpec>,
    /// Webhook endpoints, matched by url: a new one's signing secret is printed once.
    #[serde(default)]
    pub webhooks: Vec<WebhookSpec>,
}

/// A webhook endpoint of the workspace: an https url (plain http only through the Personal
/// API of a server started with `--allow-http-webhooks`), the event types it receives (none:
/// every type), a description and whether it is on.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSpec {
    pub url: String,
    #[serde(default)]
    pub types: Vec<fleetdesk_kernel::events::EventKind>,
    pub description: Option<String>,
    /// Absent: on for a new endpoint, as it is for one that exists.
    pub enabled: Option<bool>,
}

/// An ad account: `act_<digits>`, its name and currency, and the environment variable that
/// holds its access token (never the token itself).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdAccountSpec {
    pub id: String,
    pub name: String,
    pub currency: String,
    pub token_env: String,
    /// The Instagram account (its id, digits) that boosts of Instagram posts run as.
    pub instagram_user_id: Option<String>,
}

/// A monthly ad budget in a currency.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdCapSpec {
    /// As the file writes it; checked to be a whole number of cents ([`AdCapSpec::cents`]).
    pub amount: f64,
    pub currency: String,
}

impl AdCapSpec {
    /// The cap in cents, the amount the file's checks accepted.
    pub fn cents(&self) -> fleetdesk_kernel::money::Cents {
        fleetdesk_kernel::money::Cents::from_units(self.amount).unwrap_or_default()
    }
}

/// An ISO 4217 currency code: three upper-case letters.
fn check_currency(path: &str, currency: &str) -> Result<(), TenantFileError> {
    if currency.len() == 3 && currency.bytes().all(|b| b.is_ascii_uppercase()) {
        Ok(())
    } else {
        Err(err(
            path,
            "must be a currency code of three upper-case letters (TWD)",
        ))
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectSpec {
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub name: String,
    pub role: AgentRole,
    #[serde(default)]
    pub keys: u32,
    /// Hours without a heartbeat before the agent is silent (1-168; absent: 24 for a new
    /// agent, unchanged for one that exists).
    pub silent_after_hours: Option<i16>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonaSpec {
    pub name: String,
    pub project: Option<String>,
    pub agent: Option<String>,
    pub bio: Option<String>,
    pub voice: Option<String>,
    pub track: Option<String>,
    pub background: Option<String>,
    #[serde(default)]
    pub cast: Vec<CastSpec>,
    #[serde(default)]
    pub facts: Vec<FactSpec>,
    /// How the persona speaks: up to 50 rules of 1-500 characters.
    #[serde(default)]
    pub speech_rules: Vec<String>,
    /// What the persona never says or shows: up to 50 items of 1-500 characters.
    #[serde(default)]
    pub forbidden: Vec<String>,
    #[serde(default)]
    pub accounts: Vec<AccountSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CastSpec {
    pub code: String,
    pub name: String,
    pub summary: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactSpec {
    pub category: String,
    pub label: String,
    pub value: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountSpec {
    pub code: AccountCode,
    pub platform: Platform,
    #[serde(default)]
    pub state: InitialState,
    #[serde(default = "default_daily_target")]
    pub daily_target: i32,
    pub handle: Option<String>,
    #[serde(default)]
    pub publishing: Publishing,
    pub legacy_code: Option<AccountCode>,
    pub market: Option<String>,
    pub timezone: Option<String>,
    pub onboarded_at: Option<jiff::civil::Date>,
}

fn default_daily_target() -> i32 {
    1
}

fleetdesk_kernel::text_enum! {
    /// The state an account starts in.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum InitialState {
        #[default]
        Warming => "warming",
        Active => "active",
        Banned => "banned",
        Quarantined => "quarantined",
        Paused => "paused",
    }
}

fleetdesk_kernel::text_enum! {
    /// Which side publishes an account's posts: the agent with its own tool, or fleetdesk.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Publishing {
        #[default]
        Agent => "agent",
        Fleetdesk => "fleetdesk",
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommunitySpaceSpec {
    pub name: String,
    pub channel: Channel,
    pub external_id: String,
    pub market: Option<String>,
    pub space_type: Option<String>,
    pub track: Option<String>,
    pub location: Option<String>,
    pub language: Option<String>,
    /// true archives the space (the community calls then answer 404); false restores it.
    #[serde(default)]
    pub archived: bool,
}

fleetdesk_kernel::text_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Channel {
        Whatsapp => "whatsapp",
        Discord => "discord",
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProductSpec {
    pub name: String,
    #[serde(default)]
    pub on_sale: bool,
    /// What the community assistant may say about it (up to 500 characters).
    pub summary: Option<String>,
    /// The price as shown to members, e.g. "NT$590" (up to 40 characters).
    pub price: Option<String>,
    /// Where to buy it (up to 2000 characters).
    pub url: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WikiSourceSpec {
    pub kind: String,
    pub name: String,
    pub locator: String,
    #[serde(default = "default_every_hours")]
    pub every_hours: i32,
    /// A project of this workspace; absent: the source feeds shared entries.
    pub project: Option<String>,
    /// The agent of this workspace that syncs it; absent: any agent may.
    pub agent: Option<String>,
    /// What to take from the source and what to leave (up to 1000 characters).
    pub scope_note: Option<String>,
}

fn default_every_hours() -> i32 {
    24
}

/// One problem in a tenant file, with where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct TenantFileError {
    pub path: String,
    pub message: String,
}

fn err(path: impl Into<String>, message: impl Into<String>) -> TenantFileError {
    TenantFileError {
        path: path.into(),
        message: message.into(),
    }
}

fn check_name(path: &str, value: &str, max: usize) -> Result<(), TenantFileError> {
    let n = value.trim().chars().count();
    if n == 0 || n > max {
        return Err(err(path, format!("must be 1-{max} characters")));
    }
    Ok(())
}

fn check_opt(path: &str, value: &Option<String>, max: usize) -> Result<(), TenantFileError> {
    match value {
        Some(v) if v.chars().count() > max => {
            Err(err(path, format!("must be at most {max} characters")))
        }
        _ => Ok(()),
    }
}

/// An organization's `wiki_synonyms`: at most [`WIKI_SYNONYMS_MAX`] lines, each one synonym
/// group as a glossary line declares it ([`fleetdesk_wiki::aliases::one_group`]).
fn check_synonyms(path: &str, lines: &[String]) -> Result<(), TenantFileError> {
    if lines.len() > WIKI_SYNONYMS_MAX {
        return Err(err(
            format!("{path}.wiki_synonyms"),
            format!("at most {WIKI_SYNONYMS_MAX} lines"),
        ));
    }
    for (i, line) in lines.iter().enumerate() {
        if let Err(message) = fleetdesk_wiki::aliases::one_group(line) {
            return Err(err(format!("{path}.wiki_synonyms[{i}]"), message));
        }
    }
    Ok(())
}

fn unique<'a>(path: &str, names: impl Iterator<Item = &'a str>) -> Result<(), TenantFileError> {
    let mut seen = std::collections::HashSet::new();
    for n in names {
        if !seen.insert(n.trim().to_lowercase()) {
            return Err(err(path, format!("{n:?} appears twice")));
        }
    }
    Ok(())
}

/// The personal-key cap the specification sets per member per organization.
pub const MAX_PERSONAL_KEYS: u32 = 10;
/// Items of a persona's `speech_rules` and of its `forbidden` list.
pub const PERSONA_LIST_MAX: usize = 50;
/// Lines of an organization's `wiki_synonyms`.
pub const WIKI_SYNONYMS_MAX: usize = 500;
/// A sanity cap on agent keys requested at once.
pub const MAX_AGENT_KEYS: u32 = 50;

impl TenantFile {
    /// Parses and validates a whole file; nothing is applied when any part is wrong.
    pub fn parse(json: &str) -> Result<TenantFile, TenantFileError> {
        let mut de = serde_json::Deserializer::from_str(json);
        let file: TenantFile = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let path = if path.is_empty() || path == "." {
                "file".to_owned()
            } else {
                path
            };
            err(path, e.into_inner().to_string())
        })?;
        file.validate()?;
        Ok(file.normalized())
    }

    /// The file as it is applied, once valid: names, codes and texts trimmed, emails and cast
    /// codes lower-cased, a handle without its `@`, and each default the file leaves out
    /// filled in (a persona's only project, the market TW and its zone, the marketplace
    /// shopee), so the adapter writes what it is given.
    pub fn normalized(mut self) -> TenantFile {
        let person = |p: &mut PersonSpec| {
            p.email = p.email.trim().to_lowercase();
            p.name = p.name.trim().to_owned();
        };
        self.platform_admins.iter_mut().for_each(person);
        for o in &mut self.organizations {
            o.name = o.name.trim().to_owned();
            for m in &mut o.members {
                m.email = m.email.trim().to_lowercase();
                m.name = m.name.trim().to_owned();
            }
            o.workspaces.iter_mut().for_each(WorkspaceSpec::normalize);
        }
        self
    }

    pub fn validate(&self) -> Result<(), TenantFileError> {
        unique(
            "platform_admins",
            self.platform_admins.iter().map(|p| p.email.as_str()),
        )?;
        for (i, p) in self.platform_admins.iter().enumerate() {
            let path = format!("platform_admins[{i}]");
            check_email(&format!("{path}.email"), &p.email)?;
            check_name(&format!("{path}.name"), &p.name, 80)?;
            if p.keys > MAX_PERSONAL_KEYS {
                return Err(err(format!("{path}.keys"), "at most 10 personal keys"));
            }
        }
        unique(
            "organizations",
            self.organizations.iter().map(|o| o.name.as_str()),
        )?;
        for (i, o) in self.organizations.iter().enumerate() {
            let path = format!("organizations[{i}]");
            check_name(&format!("{path}.name"), &o.name, 200)?;
            if o.monthly_credit_limit < 0 {
                return Err(err(
                    format!("{path}.monthly_credit_limit"),
                    "must not be negative",
                ));
            }
            for (key, price) in [
                ("ad_product_brief", o.prices.ad_product_brief),
                ("ad_topic_keyword", o.prices.ad_topic_keyword),
            ] {
                if !(0..=1_000_000).contains(&price) {
                    return Err(err(
                        format!("{path}.prices.{key}"),
                        "credits per item found, 0 to 1000000",
                    ));
                }
            }
            check_synonyms(&path, o.wiki_synonyms.as_deref().unwrap_or_default())?;
            unique(
                &format!("{path}.members"),
                o.members.iter().map(|m| m.email.as_str()),
            )?;
            for (j, m) in o.members.iter().enumerate() {
                let mp = format!("{path}.members[{j}]");
                check_email(&format!("{mp}.email"), &m.email)?;
                check_name(&format!("{mp}.name"), &m.name, 80)?;
                if m.keys > MAX_PERSONAL_KEYS {
                    return Err(err(
                        format!("{mp}.keys"),
                        "at most 10 valid personal keys per member per organization",
                    ));
                }
            }
            unique(
                &format!("{path}.workspaces"),
                o.workspaces.iter().map(|w| w.name.as_str()),
            )?;
            let mut codes = std::collections::HashSet::new();
            for (j, w) in o.workspaces.iter().enumerate() {
                w.validate(&format!("{path}.workspaces[{j}]"), &mut codes)?;
            }
        }
        Ok(())
    }
}

fn check_email(path: &str, email: &str) -> Result<(), TenantFileError> {
    let e = email.trim();
    if e.is_empty() || e.len() > 254 || !e.contains('@') || e.contains(char::is_whitespace) {
        return Err(err(path, "must be an email address"));
    }
    Ok(())
}

/// `text` trimmed.
fn trim(text: &mut String) {
    *text = text.trim().to_owned();
}

/// `text` trimmed, when given.
fn trim_opt(text: &mut Option<String>) {
    if let Some(t) = text {
        trim(t);
    }
}

/// The market a file names (valid: [`TenantFile::validate`] read it), else the default.
fn market_or_default(market: Option<&str>) -> Market {
    market
        .and_then(|m| Market::parse(m).ok())
        .unwrap_or(Market::DEFAULT)
}

impl AccountSpec {
    /// The account's market: the file's, else TW.
    pub fn market(&self) -> Market {
        market_or_default(self.market.as_deref())
    }

    /// The zone its dates are counted in: the file's, else its market's.
    pub fn timezone(&self) -> &str {
        self.timezone
            .as_deref()
            .unwrap_or_else(|| self.market().zone_name())
    }
}

impl CommunitySpaceSpec {
    /// The space's market: the file's, else TW.
    pub fn market(&self) -> Market {
        market_or_default(self.market.as_deref())
    }

    /// The space's stored status (`fleetdesk_community::space::SpaceStatus`): archived as
    /// the file says, else active.
    pub fn status(&self) -> &'static str {
        if self.archived { "archived" } else { "active" }
    }
}

impl ProductSpec {
    /// The text the product is found by: its name and summary.
    pub fn search_text(&self) -> String {
        format!(
            "{} {}",
            self.name,
            self.summary.as_deref().unwrap_or_default()
        )
    }
}

impl WorkspaceSpec {
    /// Where the workspace's products are sold: the file's marketplace, else shopee.
    pub fn marketplace(&self) -> Marketplace {
        (self.marketplace.as_deref())
            .and_then(Marketplace::parse)
            .unwrap_or(Marketplace::Shopee)
    }

    /// See [`TenantFile::normalized`].
    fn normalize(&mut self) {
        trim(&mut self.name);
        self.projects.iter_mut().for_each(|p| trim(&mut p.name));
        self.agents.iter_mut().for_each(|a| trim(&mut a.name));
        let only_project = match self.projects.as_slice() {
            [one] => Some(one.name.clone()),
            _ => None,
        };
        for p in &mut self.personas {
            trim(&mut p.name);
            trim_opt(&mut p.project);
            if p.project.is_none() {
                p.project = only_project.clone();
            }
            trim_opt(&mut p.agent);
            p.speech_rules.iter_mut().for_each(trim);
            p.forbidden.iter_mut().for_each(trim);
            for c in &mut p.cast {
                c.code = c.code.trim().to_lowercase();
                trim(&mut c.name);
            }
            for f in &mut p.facts {
                trim(&mut f.category);
                trim(&mut f.label);
                trim(&mut f.value);
            }
            for acc in &mut p.accounts {
                acc.handle = (acc.handle.as_deref())
                    .map(|h| h.trim().trim_start_matches('@').to_owned())
                    .filter(|h| !h.is_empty());
            }
        }
        for s in &mut self.community_spaces {
            trim(&mut s.name);
            trim(&mut s.external_id);
        }
        for p in &mut self.products {
            trim(&mut p.name);
            trim_opt(&mut p.summary);
            trim_opt(&mut p.price);
            trim_opt(&mut p.url);
        }
        for a in &mut self.ad_accounts {
            for text in [&mut a.id, &mut a.name, &mut a.currency, &mut a.token_env] {
                trim(text);
            }
        }
        for s in &mut self.wiki_sources {
            trim(&mut s.name);
            trim(&mut s.locator);
            trim_opt(&mut s.project);
            trim_opt(&mut s.agent);
            trim_opt(&mut s.scope_note);
        }
    }

    /// The webhooks: each url as the Personal API takes it (https only), once; a description
    /// of up to 500 characters; at most [`fleetdesk_webhooks::endpoints::MAX_PER_WORKSPACE`].
    fn validate_webhooks(&self, path: &str) -> Result<(), TenantFileError> {
        let max = fleetdesk_webhooks::endpoints::MAX_PER_WORKSPACE;
        if self.webhooks.len() as i64 > max {
            return Err(err(
                format!("{path}.webhooks"),
                format!("at most {max} endpoints per workspace"),
            ));
        }
        unique(
            &format!("{path}.webhooks"),
            self.webhooks.iter().map(|h| h.url.as_str()),
        )?;
        for (k, h) in self.webhooks.iter().enumerate() {
            let hp = format!("{path}.webhooks[{k}]");
            if let Err(refusal) = fleetdesk_webhooks::EndpointUrl::parse(&h.url, false) {
                let message = refusal.to_string();
                let message = message.strip_prefix("url: ").unwrap_or(&message).to_owned();
                return Err(err(format!("{hp}.url"), message));
            }
            check_opt(&format!("{hp}.description"), &h.description, 500)?;
        }
        Ok(())
    }

    fn validate(
        &self,
        path: &str,
        codes: &mut std::collections::HashSet<(Platform, String)>,
    ) -> Result<(), TenantFileError> {
        check_name(&format!("{path}.name"), &self.name, 200)?;
        if let Some(m) = &self.marketplace
            && Marketplace::parse(m).is_none()
        {
            let names: Vec<&str> = Marketplace::ALL.iter().map(|m| m.as_str()).collect();
            return Err(err(
                format!("{path}.marketplace"),
                format!("one of {}", names.join(", ")),
            ));
        }
        unique(
            &format!("{path}.projects"),
            self.projects.iter().map(|p| p.name.as_str()),
        )?;
        for (k, p) in self.projects.iter().enumerate() {
            check_name(&format!("{path}.projects[{k}].name"), &p.name, 80)?;
        }
        unique(
            &format!("{path}.agents"),
            self.agents.iter().map(|a| a.name.as_str()),
        )?;
        for (k, a) in self.agents.iter().enumerate() {
            check_name(&format!("{path}.agents[{k}].name"), &a.name, 80)?;
            if a.keys > MAX_AGENT_KEYS {
                return Err(err(
                    format!("{path}.agents[{k}].keys"),
                    "at most 50 keys at once",
                ));
            }
            let hours = fleetdesk_kernel::events::SILENT_AFTER_HOURS;
            if a.silent_after_hours.is_some_and(|h| !hours.contains(&h)) {
                return Err(err(
                    format!("{path}.agents[{k}].silent_after_hours"),
                    "must be 1 to 168 (hours)",
                ));
            }
        }
        for (k, p) in self.personas.iter().enumerate() {
            let pp = format!("{path}.personas[{k}]");
            check_name(&format!("{pp}.name"), &p.name, 80)?;
            check_opt(&format!("{pp}.track"), &p.track, 200)?;
            check_opt(&format!("{pp}.background"), &p.background, 2000)?;
            check_opt(&format!("{pp}.bio"), &p.bio, 2000)?;
            check_opt(&format!("{pp}.voice"), &p.voice, 4000)?;
            match &p.project {
                Some(name) if !self.projects.iter().any(|x| x.name.trim() == name.trim()) => {
                    return Err(err(
                        format!("{pp}.project"),
                        format!("{name:?} is not a project of this workspace"),
                    ));
                }
                None if self.projects.len() != 1 => {
                    return Err(err(
                        format!("{pp}.project"),
                        "required unless the workspace has exactly one project",
                    ));
                }
                _ => {}
            }
            if let Some(agent) = &p.agent
                && !self.agents.iter().any(|a| a.name.trim() == agent.trim())
            {
                return Err(err(
                    format!("{pp}.agent"),
                    format!("{agent:?} is not an agent of this workspace"),
                ));
            }
            unique(
                &format!("{pp}.cast"),
                p.cast.iter().map(|c| c.code.as_str()),
            )?;
            for (c, cast) in p.cast.iter().enumerate() {
                check_name(&format!("{pp}.cast[{c}].code"), &cast.code, 24)?;
                check_name(&format!("{pp}.cast[{c}].name"), &cast.name, 80)?;
                check_opt(&format!("{pp}.cast[{c}].summary"), &cast.summary, 2000)?;
            }
            for (field, items) in [
                ("speech_rules", &p.speech_rules),
                ("forbidden", &p.forbidden),
            ] {
                if items.len() > PERSONA_LIST_MAX {
                    return Err(err(
                        format!("{pp}.{field}"),
                        format!("at most {PERSONA_LIST_MAX} items"),
                    ));
                }
                for (i, item) in items.iter().enumerate() {
                    check_name(&format!("{pp}.{field}[{i}]"), item, 500)?;
                }
            }
            for (f, fact) in p.facts.iter().enumerate() {
                if FactCategory::parse(fact.category.trim()).is_none() {
                    return Err(err(
                        format!("{pp}.facts[{f}].category"),
                        format!("{:?} is not a fact category", fact.category),
                    ));
                }
                check_name(&format!("{pp}.facts[{f}].label"), &fact.label, 200)?;
                check_name(&format!("{pp}.facts[{f}].value"), &fact.value, 2000)?;
            }
            for (a, acc) in p.accounts.iter().enumerate() {
                let ap = format!("{pp}.accounts[{a}]");
                if !codes.insert((acc.platform, acc.code.as_str().to_owned())) {
                    return Err(err(
                        format!("{ap}.code"),
                        format!("{} on {} appears twice", acc.code, acc.platform),
                    ));
                }
                if !(0..=100).contains(&acc.daily_target) {
                    return Err(err(format!("{ap}.daily_target"), "must be 0-100"));
                }
                if let Some(h) = &acc.handle
                    && h.trim_start_matches('@').chars().count() > 100
                {
                    return Err(err(
                        format!("{ap}.handle"),
                        "must be at most 100 characters",
                    ));
                }
                if let Some(m) = &acc.market {
                    Market::parse(m).map_err(|e| err(format!("{ap}.market"), e.to_string()))?;
                }
                if let Some(tz) = &acc.timezone
                    && jiff::tz::TimeZone::get(tz).is_err()
                {
                    return Err(err(
                        format!("{ap}.timezone"),
                        format!("{tz:?} is not an IANA zone"),
                    ));
                }
            }
        }
        unique(
            &format!("{path}.community_spaces"),
            self.community_spaces.iter().map(|s| s.external_id.as_str()),
        )?;
        for (k, s) in self.community_spaces.iter().enumerate() {
            check_name(&format!("{path}.community_spaces[{k}].name"), &s.name, 200)?;
            check_name(
                &format!("{path}.community_spaces[{k}].external_id"),
                &s.external_id,
                200,
            )?;
            if let Some(m) = &s.market {
                Market::parse(m).map_err(|e| {
                    err(
                        format!("{path}.community_spaces[{k}].market"),
                        e.to_string(),
                    )
                })?;
            }
        }
        unique(
            &format!("{path}.products"),
            self.products.iter().map(|p| p.name.as_str()),
        )?;
        for (k, p) in self.products.iter().enumerate() {
            let pp = format!("{path}.products[{k}]");
            check_name(&format!("{pp}.name"), &p.name, 200)?;
            check_opt(&format!("{pp}.summary"), &p.summary, 500)?;
            check_opt(&format!("{pp}.price"), &p.price, 40)?;
            check_opt(&format!("{pp}.url"), &p.url, 2000)?;
        }
        unique(
            &format!("{path}.wiki_sources"),
            self.wiki_sources.iter().map(|s| s.name.as_str()),
        )?;
        self.validate_webhooks(path)?;
        for (k, s) in self.wiki_sources.iter().enumerate() {
            let sp = format!("{path}.wiki_sources[{k}]");
            if ![
                "vault", "notion", "post", "review", "agent", "person", "other",
            ]
            .contains(&s.kind.as_str())
            {
                return Err(err(
                    format!("{sp}.kind"),
                    "must be one of vault, notion, post, review, agent, person, other",
                ));
            }
            check_name(&format!("{sp}.name"), &s.name, 200)?;
            check_name(&format!("{sp}.locator"), &s.locator, 2000)?;
            if let Some(param) = fleetdesk_kernel::secrets::access_token_param(&s.locator) {
                return Err(err(
                    format!("{sp}.locator"),
                    format!(
                        "carries an access token (parameter {param:?}); give a link without it"
                    ),
                ));
            }
            check_opt(&format!("{sp}.scope_note"), &s.scope_note, 1000)?;
            if let Some(name) = &s.project
                && !self.projects.iter().any(|x| x.name.trim() == name.trim())
            {
                return Err(err(
                    format!("{sp}.project"),
                    format!("{name:?} is not a project of this workspace"),
                ));
            }
            if let Some(agent) = &s.agent {
                match self.agents.iter().find(|a| a.name.trim() == agent.trim()) {
                    None => {
                        return Err(err(
                            format!("{sp}.agent"),
                            format!("{agent:?} is not an agent of this workspace"),
                        ));
                    }
                    Some(a) if !a.role.has(crate::roles::Scope::WikiWrite) => {
                        return Err(err(
                            format!("{sp}.agent"),
                            format!(
                                "{agent:?} is a {} agent: it cannot sync wiki sources",
                                a.role
                            ),
                        ));
                    }
                    Some(_) => {}
                }
            }
            if !(1..=24 * 365).contains(&s.every_hours) {
                return Err(err(format!("{sp}.every_hours"), "must be 1-8760"));
            }
        }
        unique(
            &format!("{path}.ad_accounts"),
            self.ad_accounts.iter().map(|a| a.id.as_str()),
        )?;
        for (k, a) in self.ad_accounts.iter().enumerate() {
            let ap = format!("{path}.ad_accounts[{k}]");
            let digits = a.id.strip_prefix("act_").unwrap_or_default();
            if digits.is_empty() || digits.len() > 30 || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return Err(err(
                    format!("{ap}.id"),
                    "must be act_ followed by 1-30 digits",
                ));
            }
            check_name(&format!("{ap}.name"), &a.name, 200)?;
            if let Some(ig) = &a.instagram_user_id
                && (ig.is_empty() || ig.len() > 30 || !ig.bytes().all(|b| b.is_ascii_digit()))
            {
                return Err(err(
                    format!("{ap}.instagram_user_id"),
                    "must be the Instagram account's id: 1-30 digits",
                ));
            }
            check_currency(&format!("{ap}.currency"), &a.currency)?;
            let env_name = a.token_env.as_bytes();
            let env_ok = (1..=128).contains(&env_name.len())
                && !env_name[0].is_ascii_digit()
                && env_name
                    .iter()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_');
            // The service's own settings and secrets are never sent to the ad platform.
            let own = ["FLEETDESK_", "DATABASE_", "AWS_", "PG"];
            if env_ok && own.iter().any(|p| a.token_env.starts_with(p)) {
                return Err(err(
                    format!("{ap}.token_env"),
                    "names one of the service's own settings (FLEETDESK_*, DATABASE_*, AWS_*, PG*): give the ad account's token a variable of its own",
                ));
            }
            if !env_ok {
                return Err(err(
                    format!("{ap}.token_env"),
                    "must name an environment variable (A-Z, 0-9 and _, not starting with a digit): the token itself never goes in the file",
                ));
            }
        }
        if let Some(cap) = &self.monthly_ad_cap {
            if !cap.amount.is_finite()
                || !(0.0..1e12).contains(&cap.amount)
                || fleetdesk_ads::proposal::decimals(cap.amount) > 2
            {
                return Err(err(
                    format!("{path}.monthly_ad_cap.amount"),
                    "must be 0 or more and below 1000000000000, with at most two decimals",
                ));
            }
            check_currency(&format!("{path}.monthly_ad_cap.currency"), &cap.currency)?;
        }
        Ok(())
    }
}

/// What applying printed: every id and every newly issued key.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ApplyReport {
    pub platform_admins: Vec<PersonReport>,
    pub organizations: Vec<OrganizationReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PersonReport {
    pub id: Uuid,
    pub email: String,
    pub keys: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OrganizationReport {
    pub id: Uuid,
    pub name: String,
    pub members: Vec<PersonReport>,
    pub workspaces: Vec<WorkspaceReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkspaceReport {
    pub id: Uuid,
    pub name: String,
    pub archived: bool,
    pub projects: Vec<NamedReport>,
    pub agents: Vec<AgentReport>,
    pub personas: Vec<PersonaReport>,
    pub community_spaces: Vec<SpaceReport>,
    pub webhooks: Vec<WebhookReport>,
}

/// A webhook endpoint the file applied: its id and url, and the `whsec_` secret when this
/// apply created it (shown here once, never again).
#[derive(Debug, Clone, Serialize)]
pub struct WebhookReport {
    pub id: Uuid,
    pub url: String,
    pub secret: Option<String>,
}

impl WorkspaceReport {
    /// The applied project of the workspace named `name`.
    pub fn project_id(&self, name: &str) -> Option<Uuid> {
        self.projects.iter().find(|p| p.name == name).map(|p| p.id)
    }

    /// The applied agent of the workspace named `name`.
    pub fn agent_id(&self, name: &str) -> Option<Uuid> {
        self.agents.iter().find(|a| a.name == name).map(|a| a.id)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct NamedReport {
    pub id: Uuid,
    pub name: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct AgentReport {
    pub id: Uuid,
    pub name: String,
    pub role: AgentRole,
    pub keys: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PersonaReport {
    pub id: Uuid,
    pub name: String,
    pub accounts: Vec<AccountReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AccountReport {
    pub slot_id: Uuid,
    pub account_id: Uuid,
    pub code: String,
    pub platform: Platform,
}

#[derive(Debug, Clone, Serialize)]
pub struct SpaceReport {
    pub space_id: Uuid,
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_text_is_the_serde_form() {
        for s in InitialState::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        for p in Publishing::ALL {
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
        for c in Channel::ALL {
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
        }
    }

    #[test]
    fn a_space_is_stored_archived_or_active_and_a_product_found_by_name_and_summary() {
        let space = |archived: bool| -> CommunitySpaceSpec {
            serde_json::from_value(serde_json::json!({
                "name": "Fans", "channel": "discord", "external_id": "1", "archived": archived
            }))
            .unwrap()
        };
        assert_eq!(space(true).status(), "archived");
        assert_eq!(space(false).status(), "active");
        let product: ProductSpec =
            serde_json::from_value(serde_json::json!({"name": "Mug", "summary": "blue"})).unwrap();
        assert_eq!(product.search_text(), "Mug blue");
        let bare: ProductSpec = serde_json::from_value(serde_json::json!({"name": "Mug"})).unwrap();
        assert_eq!(bare.search_text(), "Mug ");
    }

    #[test]
    fn a_workspace_report_finds_its_projects_and_agents_by_name() {
        let report = WorkspaceReport {
            id: Uuid::from_u128(1),
            name: "w".into(),
            archived: false,
            projects: vec![NamedReport {
                id: Uuid::from_u128(2),
                name: "Main".into(),
            }],
            agents: vec![AgentReport {
                id: Uuid::from_u128(3),
                name: "bot".into(),
                role: AgentRole::ALL[0],
                keys: Vec::new(),
            }],
            personas: Vec::new(),
            community_spaces: Vec::new(),
            webhooks: Vec::new(),
        };
        assert_eq!(report.project_id("Main"), Some(Uuid::from_u128(2)));
        assert_eq!(report.project_id("main"), None);
        assert_eq!(report.agent_id("bot"), Some(Uuid::from_u128(3)));
        assert_eq!(report.agent_id("Main"), None);
    }

    const EXAMPLE: &str = r#"{
      "platform_admins": [{"email": "root@example.com", "name": "Root", "keys": 1}],
      "organizations": [{
        "name": "Acme Agency", "monthly_credit_limit": 1000,
        "members": [
          {"email": "ann@acme.test", "name": "Ann", "role": "agency", "keys": 1},
          {"email": "cli@brand.test", "name": "Cli", "role": "client", "review": true, "keys": 1}
        ],
        "workspaces": [{
          "name": "Taiwan", "client_review": false, "ads_enabled": false,
          "projects": [{"name": "beauty"}],
          "agents": [
            {"name": "writer-1", "role": "operator", "keys": 1},
            {"name": "community-bot", "role": "community", "keys": 1}
          ],
          "personas": [{
            "name": "Mia", "project": "beauty", "agent": "writer-1", "bio": "...", "voice": "...",
            "accounts": [{"code": "tw-t001", "platform": "threads", "state": "active",
                          "daily_target": 2, "handle": "@mia", "publishing": "agent"}]
          }],
          "community_spaces": [{"name": "Mia fans", "channel": "whatsapp",
                                "external_id": "1203630@g.us", "market": "TW"}],
          "products": [{"name": "Serum", "on_sale": true}]
        }]
      }]
    }"#;

    #[test]
    fn the_documented_example_parses() {
        let f = TenantFile::parse(EXAMPLE).unwrap();
        let acc = &f.organizations[0].workspaces[0].personas[0].accounts[0];
        assert_eq!(acc.code.as_str(), "TW-T001");
        assert_eq!(acc.state, InitialState::Active);
        assert_eq!(f.organizations[0].members[1].role, MemberRole::Client);
        assert!(f.organizations[0].members[1].review);
    }

    #[test]
    fn research_settings_default_and_are_checked() {
        let f = TenantFile::parse(EXAMPLE).unwrap();
        let o = &f.organizations[0];
        assert!(!o.suspended);
        assert_eq!(o.prices, Prices::default());
        assert_eq!(o.workspaces[0].marketplace, None);
        let set = EXAMPLE
            .replace(
                r#""monthly_credit_limit": 1000,"#,
                r#""monthly_credit_limit": 1000, "suspended": true, "prices": {"ad_topic_keyword": 3},"#,
            )
            .replace(r#""ads_enabled": false,"#, r#""ads_enabled": false, "marketplace": "momo","#);
        let f = TenantFile::parse(&set).unwrap();
        let o = &f.organizations[0];
        assert!(o.suspended);
        assert_eq!(
            (o.prices.ad_product_brief, o.prices.ad_topic_keyword),
            (1, 3)
        );
        assert_eq!(o.workspaces[0].marketplace.as_deref(), Some("momo"));
        let cases = [
            (
                r#""prices": {"ad_topic_keyword": -1},"#,
                "organizations[0].prices.ad_topic_keyword",
            ),
            (
                r#""prices": {"ad_product_brief": 1000001},"#,
                "organizations[0].prices.ad_product_brief",
            ),
            (
                r#""prices": {"other": 1},"#,
                "organizations[0].prices.other",
            ),
        ];
        for (prices, path) in cases {
            let file = EXAMPLE.replace(
                r#""monthly_credit_limit": 1000,"#,
                &format!(r#""monthly_credit_limit": 1000, {prices}"#),
            );
            assert_eq!(TenantFile::parse(&file).unwrap_err().path, path, "{prices}");
        }
        let ebay = EXAMPLE.replace(
            r#""ads_enabled": false,"#,
            r#""ads_enabled": false, "marketplace": "ebay","#,
        );
        let e = TenantFile::parse(&ebay).unwrap_err();
        assert_eq!(e.path, "organizations[0].workspaces[0].marketplace");
        assert!(e.message.contains("shopee"), "{}", e.message);
    }

    #[test]
    fn webhooks_are_https_urls_once_each_up_to_twenty() {
        let with = |hooks: &str| {
            EXAMPLE.replace(
                r#""ads_enabled": false,"#,
                &format!(r#""ads_enabled": false, "webhooks": {hooks},"#),
            )
        };
        let good = with(
            r#"[{"url": "https://hooks.acme.test/fleet", "types": ["post.published_differs"],
                 "description": "ops chat", "enabled": false}]"#,
        );
        let f = TenantFile::parse(&good).unwrap();
        let h = &f.organizations[0].workspaces[0].webhooks[0];
        assert_eq!(
            h.types,
            [fleetdesk_kernel::events::EventKind::PostPublishedDiffers]
        );
        assert_eq!(
            (h.enabled, h.description.as_deref()),
            (Some(false), Some("ops chat"))
        );
        let path = "organizations[0].workspaces[0].webhooks";
        let refused = |hooks: String| TenantFile::parse(&with(&hooks)).unwrap_err();
        for url in [
            "http://hooks.acme.test/x",
            "hooks.acme.test",
            "https://u:p@h.test/",
        ] {
            let e = refused(format!(r#"[{{"url": "{url}"}}]"#));
            assert_eq!(e.path, format!("{path}[0].url"), "{url}");
        }
        let e = refused(r#"[{"url": "http://hooks.acme.test/x"}]"#.to_owned());
        assert!(e.message.starts_with("must use https"), "{}", e.message);
        let long = "d".repeat(501);
        let e = refused(format!(
            r#"[{{"url": "https://h.test/", "description": "{long}"}}]"#
        ));
        assert_eq!(e.path, format!("{path}[0].description"));
        let ok500 = with(&format!(
            r#"[{{"url": "https://h.test/", "description": "{}"}}]"#,
            "d".repeat(500)
        ));
        assert!(TenantFile::parse(&ok500).is_ok());
        let e = refused(r#"[{"url": "https://h.test/"}, {"url": "https://h.test/"}]"#.to_owned());
        assert_eq!(e.path, path);
        let e = refused(r#"[{"url": "https://h.test/", "types": ["post.unknown"]}]"#.to_owned());
        assert!(e.path.starts_with(path), "{}", e.path);
        let many = |n: usize| {
            let hooks: Vec<String> = (0..n)
                .map(|i| format!(r#"{{"url": "https://h.test/{i}"}}"#))
                .collect();
            format!("[{}]", hooks.join(","))
        };
        assert!(TenantFile::parse(&with(&many(20))).is_ok());
        assert_eq!(refused(many(21)).path, path);
    }

    #[test]
    fn ad_accounts_name_their_token_variable_and_the_cap_its_currency() {
        let with = |ads: &str| {
            EXAMPLE.replace(
                r#""ads_enabled": false,"#,
                &format!(r#""ads_enabled": true, {ads}"#),
            )
        };
        let good = with(
            r#""ad_accounts": [{"id": "act_123", "name": "TW", "currency": "TWD", "token_env": "META_TOKEN_TW"}],
               "monthly_ad_cap": {"amount": 50000, "currency": "TWD"},"#,
        );
        let f = TenantFile::parse(&good).unwrap();
        let w = &f.organizations[0].workspaces[0];
        assert_eq!(w.ad_accounts[0].token_env, "META_TOKEN_TW");
        assert_eq!(w.monthly_ad_cap.as_ref().map(|c| c.amount), Some(50000.0));
        let account = |field: &str| {
            let mut a = serde_json::json!({"id": "act_1", "name": "TW", "currency": "TWD", "token_env": "T"});
            let (k, v) = field.split_once('=').unwrap();
            a[k] = serde_json::json!(v);
            with(&format!(r#""ad_accounts": [{a}],"#))
        };
        let path = "organizations[0].workspaces[0].ad_accounts[0]";
        for (field, at) in [
            ("id=123", "id"),
            ("id=act_", "id"),
            ("id=act_12a", "id"),
            ("currency=twd", "currency"),
            ("currency=TW", "currency"),
            ("token_env=EAAB0123456789abcdef", "token_env"),
            ("token_env=1TOKEN", "token_env"),
            ("token_env=", "token_env"),
            ("name=", "name"),
            ("token_env=DATABASE_URL", "token_env"),
            ("token_env=AWS_SECRET_ACCESS_KEY", "token_env"),
            ("token_env=FLEETDESK_AD_RESEARCH_KEY", "token_env"),
            ("instagram_user_id=@mia", "instagram_user_id"),
        ] {
            let e = TenantFile::parse(&account(field)).unwrap_err();
            assert_eq!(e.path, format!("{path}.{at}"), "{field}");
        }
        let e = TenantFile::parse(&account("token_env=EAAB0123456789abcdef")).unwrap_err();
        assert!(
            e.message.contains("never goes in the file"),
            "{}",
            e.message
        );
        let twice = with(
            r#""ad_accounts": [{"id": "act_1", "name": "a", "currency": "TWD", "token_env": "T"},
                               {"id": "act_1", "name": "b", "currency": "TWD", "token_env": "T"}],"#,
        );
        assert_eq!(
            TenantFile::parse(&twice).unwrap_err().path,
            "organizations[0].workspaces[0].ad_accounts"
        );
        for (cap, at) in [
            (r#"{"amount": -1, "currency": "TWD"}"#, "amount"),
            (r#"{"amount": 1e12, "currency": "TWD"}"#, "amount"),
            (r#"{"amount": 10, "currency": "NT$"}"#, "currency"),
            (
                r#"{"amount": 999999999999.999, "currency": "TWD"}"#,
                "amount",
            ),
        ] {
            let e = TenantFile::parse(&with(&format!(r#""monthly_ad_cap": {cap},"#))).unwrap_err();
            assert_eq!(
                e.path,
                format!("organizations[0].workspaces[0].monthly_ad_cap.{at}"),
                "{cap}"
            );
        }
        assert!(
            TenantFile::parse(&with(
                r#""monthly_ad_cap": {"amount": 0, "currency": "TWD"},"#
            ))
            .is_ok()
        );
    }

    #[test]
    fn unknown_fields_and_bad_references_are_named() {
        let e = TenantFile::parse(r#"{"organisations": []}"#).unwrap_err();
        assert_eq!(e.path, "organisations");
        let e = TenantFile::parse("1").unwrap_err();
        assert_eq!(e.path, "file");
        let colour = EXAMPLE.replace(
            r#""role": "operator", "keys": 1}"#,
            r#""role": "operator", "keys": 1, "colour": "red"}"#,
        );
        let e = TenantFile::parse(&colour).unwrap_err();
        assert_eq!(e.path, "organizations[0].workspaces[0].agents[0].colour");
        assert!(e.message.contains("colour"), "{}", e.message);
        let bad_agent = EXAMPLE.replace(r#""agent": "writer-1""#, r#""agent": "ghost""#);
        let e = TenantFile::parse(&bad_agent).unwrap_err();
        assert_eq!(e.path, "organizations[0].workspaces[0].personas[0].agent");
        let bad_market = EXAMPLE.replace(r#""market": "TW""#, r#""market": "ZZ""#);
        let e = TenantFile::parse(&bad_market).unwrap_err();
        assert_eq!(
            e.path,
            "organizations[0].workspaces[0].community_spaces[0].market"
        );
    }

    #[test]
    fn wiki_sources_name_their_project_and_agent_and_carry_no_token() {
        let with = |source: &str| {
            EXAMPLE.replace(
                r#""products": [{"name": "Serum", "on_sale": true}]"#,
                &format!(r#""products": [{{"name": "Serum", "on_sale": true}}], "wiki_sources": [{source}]"#),
            )
        };
        let ok = with(
            r#"{"kind": "notion", "name": "Voice", "locator": "https://notion.so/voice?v=2",
                "project": "beauty", "agent": "writer-1", "scope_note": "voice only"}"#,
        );
        let f = TenantFile::parse(&ok).unwrap();
        let source = &f.organizations[0].workspaces[0].wiki_sources[0];
        assert_eq!(source.project.as_deref(), Some("beauty"));
        assert_eq!(f.organizations[0].wiki_review, None);
        let path = "organizations[0].workspaces[0].wiki_sources[0]";
        for (source, field) in [
            (
                r#"{"kind": "notion", "name": "V", "locator": "https://n.so/v?token=abc"}"#,
                "locator",
            ),
            (
                r#"{"kind": "notion", "name": "V", "locator": "v", "project": "hair"}"#,
                "project",
            ),
            (
                r#"{"kind": "notion", "name": "V", "locator": "v", "agent": "ghost"}"#,
                "agent",
            ),
            (
                r#"{"kind": "notion", "name": "V", "locator": "v", "agent": "community-bot"}"#,
                "agent",
            ),
            (r#"{"kind": "blog", "name": "V", "locator": "v"}"#, "kind"),
            (
                &format!(
                    r#"{{"kind": "notion", "name": "{}", "locator": "v"}}"#,
                    "n".repeat(201)
                ),
                "name",
            ),
            (
                &format!(
                    r#"{{"kind": "notion", "name": "V", "locator": "{}"}}"#,
                    "l".repeat(2001)
                ),
                "locator",
            ),
            (
                &format!(
                    r#"{{"kind": "notion", "name": "V", "locator": "v", "scope_note": "{}"}}"#,
                    "s".repeat(1001)
                ),
                "scope_note",
            ),
            (
                r#"{"kind": "notion", "name": "V", "locator": "v", "every_hours": 0}"#,
                "every_hours",
            ),
            (
                r#"{"kind": "notion", "name": "V", "locator": "v", "every_hours": 8761}"#,
                "every_hours",
            ),
        ] {
            let e = TenantFile::parse(&with(source)).unwrap_err();
            assert_eq!(e.path, format!("{path}.{field}"), "{}", e.message);
        }
        let at_limits = with(&format!(
            r#"{{"kind": "other", "name": "{}", "locator": "{}", "scope_note": "{}",
                "every_hours": 8760}}"#,
            "n".repeat(200),
            "l".repeat(2000),
            "s".repeat(1000)
        ));
        TenantFile::parse(&at_limits).expect("every field at its limit");
        let hourly = with(r#"{"kind": "vault", "name": "V", "locator": "v", "every_hours": 1}"#);
        TenantFile::parse(&hourly).expect("every hour");
        let manual = EXAMPLE.replace(
            r#""monthly_credit_limit": 1000,"#,
            r#""monthly_credit_limit": 1000, "wiki_review": "manual","#,
        );
        let f = TenantFile::parse(&manual).unwrap();
        assert_eq!(f.organizations[0].wiki_review, Some(WikiReview::Manual));
    }

    #[test]
    fn personal_keys_are_capped_at_ten() {
        let many = EXAMPLE.replace(
            r#""role": "agency", "keys": 1"#,
            r#""role": "agency", "keys": 11"#,
        );
        let e = TenantFile::parse(&many).unwrap_err();
        assert_eq!(e.path, "organizations[0].members[0].keys");
    }

    #[test]
    fn wiki_synonyms_are_one_group_a_line_up_to_500_lines() {
        let with = |lines: &[String]| {
            EXAMPLE.replace(
                r#""monthly_credit_limit": 1000,"#,
                &format!(
                    r#""monthly_credit_limit": 1000, "wiki_synonyms": {},"#,
                    serde_json::to_string(lines).unwrap()
                ),
            )
        };
        let f = TenantFile::parse(&with(&["A醇 = 視黃醇".to_owned()])).unwrap();
        assert_eq!(
            f.organizations[0].wiki_synonyms.as_deref(),
            Some(&["A醇 = 視黃醇".to_owned()][..])
        );
        assert_eq!(
            TenantFile::parse(EXAMPLE).unwrap().organizations[0].wiki_synonyms,
            None
        );
        let lines: Vec<String> = (0..WIKI_SYNONYMS_MAX)
            .map(|i| format!("x{i} = y{i}"))
            .collect();
        TenantFile::parse(&with(&lines)).expect("500 lines");
        let mut past = lines.clone();
        past.push("x = y".to_owned());
        let e = TenantFile::parse(&with(&past)).unwrap_err();
        assert_eq!(e.path, "organizations[0].wiki_synonyms");
        for bad in ["視黃醇", "a = b; c = d", "= 視黃醇", "貓咪 = 猫咪"] {
            let e = TenantFile::parse(&with(&["x = y".to_owned(), bad.to_owned()])).unwrap_err();
            assert_eq!(e.path, "organizations[0].wiki_synonyms[1]", "{bad}");
            assert!(e.message.contains("joined by ="), "{}", e.message);
        }
    }

    #[test]
    fn a_code_twice_on_one_platform_is_refused() {
        let twice = EXAMPLE.replace(
            r#""publishing": "agent"}]"#,
            r#""publishing": "agent"}, {"code": "TW-T001", "platform": "threads"}]"#,
        );
        let e = TenantFile::parse(&twice).unwrap_err();
        assert!(e.path.ends_with("accounts[1].code"), "{}", e.path);
    }

    #[test]
    fn a_valid_file_is_applied_trimmed_and_with_its_defaults() {
        let file = TenantFile::parse(
            r#"{
              "platform_admins": [{"email": " Root@Example.COM ", "name": " Root "}],
              "organizations": [{
                "name": " Agency ",
                "members": [{"email": " Mia@A.Example", "name": " Mia ", "role": "agency"}],
                "workspaces": [{
                  "name": " Tea ",
                  "projects": [{"name": " Leaf "}],
                  "agents": [{"name": " writer ", "role": "operator"}],
                  "personas": [{
                    "name": " Lin ", "agent": "writer ",
                    "cast": [{"code": " Momo ", "name": " Momo the cat "}],
                    "facts": [{"category": " pet ", "label": " cat ", "value": " Momo "}],
                    "speech_rules": [" short "],
                    "accounts": [
                      {"code": "TW-T001", "platform": "threads", "handle": " @lin.tea "},
                      {"code": "TW-T002", "platform": "instagram", "handle": "@",
                       "market": "hk"}
                    ]
                  }],
                  "community_spaces": [{"name": " Fans ", "channel": "discord",
                    "external_id": " 42 ", "market": "jp"}],
                  "products": [{"name": " Oolong ", "summary": " roasted ", "url": " u "}],
                  "wiki_sources": [{"kind": "notion", "name": " Voice ", "locator": " v ",
                    "project": " Leaf", "scope_note": " tone "}]
                }]
              }]
            }"#,
        )
        .unwrap();
        assert_eq!(file.platform_admins[0].email, "root@example.com");
        assert_eq!(file.platform_admins[0].name, "Root");
        let org = &file.organizations[0];
        assert_eq!(org.name, "Agency");
        assert_eq!(
            (org.members[0].email.as_str(), org.members[0].name.as_str()),
            ("mia@a.example", "Mia")
        );
        let w = &org.workspaces[0];
        assert_eq!(
            (w.name.as_str(), w.projects[0].name.as_str()),
            ("Tea", "Leaf")
        );
        assert_eq!(w.agents[0].name, "writer");
        assert_eq!(w.marketplace(), Marketplace::Shopee);
        let p = &w.personas[0];
        assert_eq!(p.name, "Lin");
        assert_eq!(p.project.as_deref(), Some("Leaf"), "the only project");
        assert_eq!(p.agent.as_deref(), Some("writer"));
        assert_eq!(
            (p.cast[0].code.as_str(), p.cast[0].name.as_str()),
            ("momo", "Momo the cat")
        );
        let f = &p.facts[0];
        assert_eq!(
            (f.category.as_str(), f.label.as_str(), f.value.as_str()),
            ("pet", "cat", "Momo")
        );
        assert_eq!(p.speech_rules, ["short"]);
        let (tw, hk) = (&p.accounts[0], &p.accounts[1]);
        assert_eq!(tw.handle.as_deref(), Some("lin.tea"));
        assert_eq!(
            (tw.market(), tw.timezone()),
            (Market::DEFAULT, "Asia/Taipei")
        );
        assert_eq!(hk.handle, None, "a lone @ is no handle");
        assert_eq!(hk.market().as_str(), "HK");
        assert_eq!(hk.timezone(), "Asia/Hong_Kong");
        let space = &w.community_spaces[0];
        assert_eq!(
            (space.name.as_str(), space.external_id.as_str()),
            ("Fans", "42")
        );
        assert_eq!(space.market().as_str(), "JP");
        let product = &w.products[0];
        assert_eq!(product.name, "Oolong");
        assert_eq!(product.summary.as_deref(), Some("roasted"));
        assert_eq!(product.url.as_deref(), Some("u"));
        let source = &w.wiki_sources[0];
        assert_eq!(
            (source.name.as_str(), source.locator.as_str()),
            ("Voice", "v")
        );
        assert_eq!(source.project.as_deref(), Some("Leaf"));
        assert_eq!(source.scope_note.as_deref(), Some("tone"));
    }
}
