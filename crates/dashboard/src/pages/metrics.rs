//! Metrics as charts (`GET /metrics`): views and engagement per day over every account in
//! reach, and followers per account, each with its numbers in a table.

use super::{list, n, query, read_or_answer, s, session_or_answer};
use crate::Dashboard;
use crate::chart::{COLOURS, Series, count, lines};
use crate::layout::{page, trusted};
use actix_web::{HttpRequest, HttpResponse, web};
use jiff::civil::Date;
use maud::{Markup, html};
use serde_json::{Map, Value, json};

/// Every day from `from` to `to`, both included (at most the API's 92).
pub(crate) fn days(from: &str, to: &str) -> Vec<String> {
    let (Ok(mut day), Ok(last)) = (from.parse::<Date>(), to.parse::<Date>()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    while day <= last && out.len() < 92 {
        out.push(day.to_string());
        match day.tomorrow() {
            Ok(next) => day = next,
            Err(_) => break,
        }
    }
    out
}

/// A series' values on `days`: what `pick` reads of each day it reported.
pub(crate) fn on_days(
    days: &[String],
    series: &Value,
    pick: impl Fn(&Value) -> Option<f64>,
) -> Vec<Option<f64>> {
    let reported = list(series, "days");
    days.iter()
        .map(|d| reported.iter().find(|r| s(r, "date") == d).and_then(&pick))
        .collect()
}

/// Likes, replies, reposts and shares of a day, when any was reported.
pub(crate) fn engagement(day: &Value) -> Option<f64> {
    let parts: Vec<f64> = ["likes", "replies", "reposts", "shares"]
        .iter()
        .filter_map(|k| day.get(*k).and_then(Value::as_f64))
        .collect();
    (!parts.is_empty()).then(|| parts.iter().sum())
}

/// A chart with its legend and, folded, its numbers.
pub(crate) fn figure(title: &str, days: &[String], series: &[Series]) -> Markup {
    html! {
        figure {
            figcaption { h2 { (title) } }
            (trusted(lines(title, days, series)))
            ul.legend {
                @for (i, s) in series.iter().enumerate() {
                    li { i class={"swatch c" (i % COLOURS.len())} {} (s.label) }
                }
            }
            details {
                summary { "The numbers" }
                div.scroll tabindex="0" {
                    table {
                        thead { tr { th { "Day" } @for s in series { th.num { (s.label) } } } }
                        tbody {
                            @for (i, day) in days.iter().enumerate() {
                                tr {
                                    td { (day) }
                                    @for s in series {
                                        td.num { @match s.values[i] { Some(v) => (count(v)), None => "—" } }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

pub(crate) async fn charts(req: HttpRequest, dash: web::Data<Dashboard>) -> HttpResponse {
    let session = session_or_answer!(&req, &dash);
    let mut q = query(&req);
    q.retain(|k, _| matches!(k.as_str(), "from" | "to" | "workspace"));
    let per_day = read_or_answer!(dash, &req, &session, "/metrics", Map::new(), q.clone());
    let mut by_account = q.clone();
    by_account.insert("group".into(), json!("account"));
    let per_account = read_or_answer!(dash, &req, &session, "/metrics", Map::new(), by_account);
    let days = days(s(&per_day, "from"), s(&per_day, "to"));
    let total = list(&per_day, "series")
        .first()
        .cloned()
        .unwrap_or(Value::Null);
    let activity = [
        Series {
            label: "Views".into(),
            values: on_days(&days, &total, |d| d.get("views").and_then(Value::as_f64)),
        },
        Series {
            label: "Engagement (likes, replies, reposts, shares)".into(),
            values: on_days(&days, &total, engagement),
        },
    ];
    let published = [Series {
        label: "Posts published".into(),
        // A day without a row published nothing.
        values: on_days(&days, &total, |d| Some(n(d, "posts_published")))
            .into_iter()
            .map(|v| v.or(Some(0.0)))
            .collect(),
    }];
    let followers: Vec<Series> = list(&per_account, "series")
        .iter()
        .map(|series| Series {
            label: format!(
                "{} ({})",
                series
                    .pointer("/account/code")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                series
                    .pointer("/account/platform")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            ),
            values: on_days(&days, series, |d| {
                d.get("followers").and_then(Value::as_f64)
            }),
        })
        .filter(|s| s.values.iter().any(Option::is_some))
        .collect();
    let body = html! {
        form.filters method="get" {
            label { "From" input type="date" name="from" value=(s(&per_day, "from")); }
            label { "To" input type="date" name="to" value=(s(&per_day, "to")); }
            button type="submit" { "Show" }
        }
        (figure("Views and engagement per day", &days, &activity))
        (figure("Posts published per day", &days, &published))
        @if followers.is_empty() {
            h2 { "Followers per account" }
            p.muted { "No follower counts were reported in these days." }
        } @else {
            (figure("Followers per account", &days, &followers))
        }
    };
    page(&req, &dash, &session, "Metrics", "/metrics", body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_days_of_a_window_both_ends_included() {
        assert_eq!(
            days("2026-11-29", "2026-12-01"),
            ["2026-11-29", "2026-11-30", "2026-12-01"]
        );
        assert!(days("2026-12-01", "2026-11-29").is_empty());
        assert!(days("", "2026-11-29").is_empty());
    }

    #[test]
    fn a_series_is_read_on_every_day_and_engagement_sums_what_was_reported() {
        let d = days("2026-11-01", "2026-11-03");
        let series = json!({"days": [
            {"date": "2026-11-01", "views": 10, "likes": 2, "replies": null, "reposts": 1, "shares": null},
            {"date": "2026-11-03", "views": 5, "likes": null, "replies": null, "reposts": null, "shares": null},
        ]});
        assert_eq!(
            on_days(&d, &series, |x| x.get("views").and_then(Value::as_f64)),
            [Some(10.0), None, Some(5.0)]
        );
        assert_eq!(on_days(&d, &series, engagement), [Some(3.0), None, None]);
    }
}
