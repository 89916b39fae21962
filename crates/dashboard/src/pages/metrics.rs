//! Metrics as charts (`GET /metrics`): views and engagement per day over every account in
//! reach, and followers per account, each with its numbers in a table.

use super::{call_or_answer, input_or_answer, session_or_answer};
use crate::Dashboard;
use crate::chart::{COLOURS, Series, count, lines};
use crate::layout::{page, trusted};
use actix_web::{HttpRequest, HttpResponse, web};
use fleetdesk_reports::metrics::Group;
use fleetdesk_reports::wire::personal::Metrics;
use fleetdesk_reports::wire::{MetricsDayOut, MetricsSeriesOut};
use jiff::civil::Date;
use maud::{Markup, html};

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

/// A series' values on `days`: what `pick` reads of each day it reported (none on every day
/// without a series).
pub(crate) fn on_days(
    days: &[String],
    series: Option<&MetricsSeriesOut>,
    pick: impl Fn(&MetricsDayOut) -> Option<f64>,
) -> Vec<Option<f64>> {
    let reported = series.map_or(&[][..], |s| s.days.as_slice());
    days.iter()
        .map(|d| reported.iter().find(|r| &r.date == d).and_then(&pick))
        .collect()
}

/// A counter of a day as a chart's number.
fn number(v: Option<i64>) -> Option<f64> {
    v.map(|v| v as f64)
}

/// Likes, replies, reposts and shares of a day, when any was reported.
pub(crate) fn engagement(day: &MetricsDayOut) -> Option<f64> {
    let parts: Vec<f64> = [day.likes, day.replies, day.reposts, day.shares]
        .into_iter()
        .filter_map(number)
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
    const KEEP: &[&str] = &["from", "to", "workspace"];
    let input = input_or_answer!(dash, &req, &session, Metrics, KEEP);
    let mut by_account = input_or_answer!(dash, &req, &session, Metrics, KEEP);
    by_account.query.group = Some(Group::Account);
    let per_day = call_or_answer!(dash, &req, &session, Metrics, input);
    let per_account = call_or_answer!(dash, &req, &session, Metrics, by_account);
    let days = days(&per_day.from, &per_day.to);
    let total = per_day.series.first();
    let activity = [
        Series {
            label: "Views".into(),
            values: on_days(&days, total, |d| number(d.views)),
        },
        Series {
            label: "Engagement (likes, replies, reposts, shares)".into(),
            values: on_days(&days, total, engagement),
        },
    ];
    let published = [Series {
        label: "Posts published".into(),
        // A day without a row published nothing.
        values: on_days(&days, total, |d| number(Some(d.posts_published)))
            .into_iter()
            .map(|v| v.or(Some(0.0)))
            .collect(),
    }];
    let followers: Vec<Series> = (per_account.series.iter())
        .map(|series| {
            let (code, platform) = series
                .account
                .as_ref()
                .map_or(("", ""), |a| (a.code.as_str(), a.platform.as_str()));
            Series {
                label: format!("{code} ({platform})"),
                values: on_days(&days, Some(series), |d| number(d.followers)),
            }
        })
        .filter(|s| s.values.iter().any(Option::is_some))
        .collect();
    let body = html! {
        form.filters method="get" {
            label { "From" input type="date" name="from" value=(per_day.from); }
            label { "To" input type="date" name="to" value=(per_day.to); }
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

    /// A reported day: its views and its likes, replies, reposts and shares; nothing
    /// published, no followers.
    fn day(date: &str, views: Option<i64>, counters: [Option<i64>; 4]) -> MetricsDayOut {
        let [likes, replies, reposts, shares] = counters;
        MetricsDayOut {
            date: date.to_owned(),
            views,
            likes,
            replies,
            reposts,
            shares,
            posts_published: 0,
            followers: None,
        }
    }

    #[test]
    fn a_series_is_read_on_every_day_and_engagement_sums_what_was_reported() {
        let d = days("2026-11-01", "2026-11-03");
        let series = MetricsSeriesOut {
            account: None,
            post: None,
            days: vec![
                day("2026-11-01", Some(10), [Some(2), None, Some(1), None]),
                day("2026-11-03", Some(5), [None; 4]),
            ],
        };
        assert_eq!(
            on_days(&d, Some(&series), |x| number(x.views)),
            [Some(10.0), None, Some(5.0)]
        );
        assert_eq!(
            on_days(&d, Some(&series), engagement),
            [Some(3.0), None, None]
        );
        assert_eq!(on_days(&d, None, engagement), [None, None, None]);
    }
}
