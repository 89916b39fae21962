//! A local stand-in for Meta's Marketing API (Graph API v25.0), answering with the shapes of
//! Meta's documentation, for the Meta adapter's tests and the scenario of the real binary. It
//! keeps one ad account's ads in memory (so a pause shows in the next sync), checks the bearer
//! token on every request, and records every request it gets.

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// The path after the version, e.g. `act_1001/ads` or `2001`.
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub form: BTreeMap<String, String>,
    /// The `Authorization` header as sent.
    pub authorization: Option<String>,
}

#[derive(Default)]
struct State {
    token: String,
    seen: Vec<Seen>,
    /// Ad id to (effective status, daily budget in minor units).
    ads: BTreeMap<String, (String, i64)>,
    created: u64,
}

/// The fake: its base URL (with the version) and what it saw.
pub struct FakeMeta {
    pub base: String,
    state: Arc<Mutex<State>>,
    pub handle: actix_web::dev::ServerHandle,
}

impl FakeMeta {
    /// Serves act_1001 with ads 2001 (active, 500 a day), 2002 (paused, lifetime 30 000) and
    /// 2003 (deleted), for the bearer `token`. Ad 2999 answers Meta's error; ad 2998 answers
    /// after 3 seconds; a creative of the story 111_bad is refused.
    pub async fn start(token: &str) -> FakeMeta {
        let state = Arc::new(Mutex::new(State {
            token: token.to_owned(),
            ads: BTreeMap::from([
                ("2001".to_owned(), ("ACTIVE".to_owned(), 500)),
                ("2002".to_owned(), ("PAUSED".to_owned(), 0)),
            ]),
            ..State::default()
        }));
        let data = web::Data::new(state.clone());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}/v25.0", listener.local_addr().expect("addr"));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .app_data(web::PayloadConfig::new(1 << 20))
                .default_service(web::to(answer))
        })
        .workers(1)
        .listen(listener)
        .expect("listen")
        .run();
        let handle = server.handle();
        tokio::spawn(server);
        FakeMeta {
            base,
            state,
            handle,
        }
    }

    /// Every request so far, oldest first.
    pub fn seen(&self) -> Vec<Seen> {
        self.state
            .lock()
            .map(|s| s.seen.clone())
            .unwrap_or_default()
    }

    /// The effective status of an ad now.
    pub fn ad_status(&self, id: &str) -> Option<String> {
        self.state
            .lock()
            .ok()
            .and_then(|s| s.ads.get(id).map(|a| a.0.clone()))
    }
}

fn pairs(text: &str) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

fn meta_error(status: u16, message: &str, code: i64) -> HttpResponse {
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).expect("status")).json(
        json!({"error": {"message": message, "type": "OAuthException", "code": code,
                         "fbtrace_id": "AbCdEf"}}),
    )
}

async fn answer(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<Arc<Mutex<State>>>,
) -> HttpResponse {
    let path = req
        .path()
        .trim_start_matches("/v25.0/")
        .trim_end_matches('/')
        .to_owned();
    let seen = Seen {
        method: req.method().to_string(),
        path: path.clone(),
        query: pairs(req.query_string()),
        form: pairs(std::str::from_utf8(&body).unwrap_or_default()),
        authorization: req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    };
    if seen.path == "2998" {
        // Answers only after the caller's timeout.
        state.lock().expect("state").seen.push(seen);
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        return HttpResponse::Ok().json(json!({"success": true}));
    }
    let mut s = state.lock().expect("state");
    s.seen.push(seen.clone());
    if seen.authorization != Some(format!("Bearer {}", s.token)) {
        return meta_error(401, "Invalid OAuth access token.", 190);
    }
    let parts: Vec<&str> = path.split('/').collect();
    match (seen.method.as_str(), parts.as_slice()) {
        ("GET", [act]) if act.starts_with("act_") => {
            HttpResponse::Ok().json(json!({"id": act, "account_status": 1}))
        }
        ("GET", [_, "campaigns"]) => {
            // Two pages: the second asked with `after`.
            if seen.query.get("after").map(String::as_str) == Some("c1") {
                HttpResponse::Ok().json(json!({"data": [
                    {"id": "3002", "name": "Autumn sale", "effective_status": "PAUSED"}
                ], "paging": {"cursors": {"before": "c1", "after": "c2"}}}))
            } else {
                HttpResponse::Ok().json(json!({"data": [
                    {"id": "3001", "name": "Serum launch", "effective_status": "ACTIVE"}
                ], "paging": {"cursors": {"before": "c0", "after": "c1"},
                              "next": "https://graph.facebook.com/v25.0/act_1001/campaigns?after=c1"}}))
            }
        }
        ("GET", [_, "insights"]) => {
            let range: Value = seen
                .query
                .get("time_range")
                .and_then(|r| serde_json::from_str(r).ok())
                .unwrap_or_default();
            let until = range["until"].as_str().unwrap_or("2026-11-27").to_owned();
            let day = until.parse::<jiff::civil::Date>().expect("until");
            let yesterday = day.yesterday().expect("yesterday").to_string();
            HttpResponse::Ok().json(json!({"data": [
                {"campaign_id": "3001", "date_start": yesterday, "date_stop": yesterday,
                 "spend": "120.50", "impressions": "4000", "reach": "3500", "clicks": "80",
                 "actions": [{"action_type": "link_click", "value": "70"},
                             {"action_type": "post_engagement", "value": "150"}]},
                {"campaign_id": "3001", "date_start": until, "date_stop": until,
                 "spend": "99.50", "impressions": "1000", "reach": "900", "clicks": "20",
                 "actions": [{"action_type": "link_click", "value": "12"}]},
                {"campaign_id": "3002", "date_start": until, "date_stop": until,
                 "spend": "0", "impressions": "0", "reach": "0", "clicks": "0"},
                {"campaign_id": "3009", "campaign_name": "Deleted flash sale",
                 "date_start": yesterday, "date_stop": yesterday,
                 "spend": "40.00", "impressions": "100", "reach": "90", "clicks": "1"}
            ]}))
        }
        ("GET", [_, "ads"]) => {
            let status = |id: &str| s.ads.get(id).map(|a| a.0.clone()).unwrap_or_default();
            let budget = s.ads.get("2001").map(|a| a.1).unwrap_or_default();
            HttpResponse::Ok().json(json!({"data": [
                {"id": "2001", "name": "Serum ad", "campaign_id": "3001", "adset_id": "4001",
                 "effective_status": status("2001"),
                 "creative": {"id": "5001", "effective_object_story_id": "111_222"},
                 "adset": {"id": "4001", "daily_budget": budget.to_string(),
                           "start_time": "2026-11-01T10:00:00+0800"}},
                {"id": "2002", "name": "Sale ad", "campaign_id": "3002", "adset_id": "4002",
                 "effective_status": status("2002"),
                 "creative": {"id": "5002"},
                 "adset": {"id": "4002", "lifetime_budget": "30000",
                           "start_time": "2026-11-01T10:00:00+0800",
                           "end_time": "2026-12-01T10:00:00+0800"}},
                {"id": "2003", "name": "Old ad", "campaign_id": "3002", "adset_id": "4003",
                 "effective_status": "DELETED", "adset": {"id": "4003", "daily_budget": "100"}}
            ]}))
        }
        ("POST", [_, "adcreatives"])
            if seen.form.get("object_story_id").map(String::as_str) == Some("111_bad") =>
        {
            meta_error(400, "Invalid object_story_id", 100)
        }
        ("POST", [_, edge @ ("campaigns" | "adsets" | "adcreatives" | "ads")]) => {
            s.created += 1;
            let id = format!("9{:03}{}", s.created, edge.len());
            if *edge == "ads" {
                s.ads.insert(id.clone(), ("PAUSED".to_owned(), 0));
            }
            HttpResponse::Ok().json(json!({"id": id}))
        }
        ("POST", ["2999"]) => meta_error(400, "Unsupported post request.", 100),
        ("POST", [id]) => {
            let form = seen.form.clone();
            if let Some(status) = form.get("status")
                && let Some(ad) = s.ads.get_mut(*id)
            {
                ad.0 = status.clone();
            }
            if let Some(b) = form.get("daily_budget").and_then(|b| b.parse().ok())
                && *id == "4001"
                && let Some(ad) = s.ads.get_mut("2001")
            {
                ad.1 = b;
            }
            HttpResponse::Ok().json(json!({"success": true}))
        }
        _ => meta_error(400, "Unknown path components", 2500),
    }
}
