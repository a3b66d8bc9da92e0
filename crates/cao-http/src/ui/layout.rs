//! The page shell every UI page shares (head, navigation, footer), the error and sign-in pages, and small
//! rendering helpers (the view gauge, bars, short text). Everything goes through maud, which escapes every
//! interpolated value; no helper here emits raw markup built from data.

use super::Ctx;
use super::csrf;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};
use std::fmt::Write as _;

/// What a page needs to exist: pages of a feature that is switched off are absent (not in the navigation, and
/// their routes answer 404).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Always there.
    Nothing,
    /// Only with `memory.learning_enabled` on (outcomes, lessons, promotion).
    Learning,
}

/// The navigation: one row per page (path, label, what it needs). A new page is one more row here and its route
/// in [`super::ui_router`].
pub const NAV: &[(&str, &str, Needs)] = &[
    ("/ui", "Containers", Needs::Nothing),
    ("/ui/memories", "Browse", Needs::Nothing),
    ("/ui/relationships", "Relationships", Needs::Nothing),
    ("/ui/lint", "Lint & heal", Needs::Nothing),
    ("/ui/learning", "Learning", Needs::Learning),
    ("/ui/journal", "Journal", Needs::Nothing),
];

/// The shell around `body`, with `active` the [`NAV`] path to mark; `learning` shows the learning pages.
fn shell(title: &str, active: Option<&str>, who: Option<&str>, auth_on: bool, learning: bool, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · cao memory" }
                link rel="stylesheet" href="/ui/static/ui.css";
                script src="/ui/static/ui.js" defer {}
            }
            body data-auth=(if auth_on { "on" } else { "off" }) {
                header.top {
                    a.brand href="/ui" { "cao memory" }
                    nav aria-label="pages" {
                        @for (path, label, needs) in NAV {
                            @if *needs == Needs::Nothing || learning {
                                a href=(path) aria-current=[(active == Some(*path)).then_some("page")] { (label) }
                            }
                        }
                    }
                    @if let Some(who) = who { span.who { (who) } }
                }
                main { (body) }
                footer { "cao-rs " (env!("CARGO_PKG_VERSION")) " · memory content is shown as untrusted text" }
            }
        }
    }
}

/// A full page answered with `status`, setting the CSRF cookie when the request had none.
pub fn page(ctx: &Ctx, status: StatusCode, title: &str, active: Option<&str>, body: Markup) -> Response {
    let who = ctx.principal.as_ref().map(|p| {
        let scope = p.scope.map_or("no cao scope", |s| s.as_str());
        match &p.subject {
            Some(sub) => format!("{sub} ({scope})"),
            None => scope.to_owned(),
        }
    });
    let markup = shell(title, active, who.as_deref(), ctx.auth_on, ctx.learning, body);
    let mut resp = (status, axum::response::Html(markup.into_string())).into_response();
    set_html(&mut resp);
    if ctx.csrf.fresh {
        resp.headers_mut().append(header::SET_COOKIE, ctx.csrf.set_cookie());
    }
    resp
}

/// A fragment (no shell), for in-place expansion.
pub fn fragment(body: Markup) -> Response {
    let mut resp = (StatusCode::OK, axum::response::Html(body.into_string())).into_response();
    set_html(&mut resp);
    resp
}

fn set_html(resp: &mut Response) {
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
}

/// An error page: the status, the stable code and the message (escaped).
pub fn error_page(status: StatusCode, code: &str, message: &str) -> Response {
    let body = html! {
        section.error data-error=(code) {
            h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("error")) }
            p { code { (code) } }
            p.message { (message) }
            p { a href="/ui" { "Back to the containers" } }
        }
    };
    let mut resp = (
        status,
        axum::response::Html(shell("Error", None, None, false, false, body).into_string()),
    )
        .into_response();
    set_html(&mut resp);
    resp
}

/// The sign-in page answered to a request without a valid bearer token while auth is on (status 401). The script
/// keeps the token in `sessionStorage` and sends it with every request of the tab.
pub fn sign_in_page(message: &str) -> Response {
    let body = html! {
        section.signin data-auth-required="1" {
            h1 { "Sign in" }
            p { "This server needs a bearer token (a JWT with the " code { "cao:read" } " scope to read, "
                code { "cao:write" } " to review relationships, " code { "cao:admin" } " to delete, purge or heal)." }
            p.message { (message) }
            form #token-form data-token-form="1" action="/ui" method="get" {
                label for="token" { "Bearer token" }
                input #token type="password" autocomplete="off" required;
                button type="submit" { "Use this token" }
            }
            p.hint { "The token is kept in this tab's session storage only, and sent as an Authorization header." }
            noscript { p.warn { "Signing in with a token needs JavaScript; without auth the UI reads without it." } }
        }
    };
    let mut resp = (
        StatusCode::UNAUTHORIZED,
        axum::response::Html(shell("Sign in", None, None, true, false, body).into_string()),
    )
        .into_response();
    set_html(&mut resp);
    resp
}

/// The hidden CSRF field of a form.
pub fn csrf_field(ctx: &Ctx) -> Markup {
    html! { input type="hidden" name=(csrf::FIELD) value=(ctx.csrf.value); }
}

/// A horizontal gauge of `value` out of `max` (inline SVG, no style attribute); `over` marks it when above.
pub fn gauge(value: u64, max: u64, label: &str) -> Markup {
    const W: u64 = 160;
    let filled = (value.min(max) * W).checked_div(max).unwrap_or(0);
    let class = if value > max {
        "gauge over"
    } else if value * 10 >= max * 9 {
        "gauge high"
    } else {
        "gauge"
    };
    html! {
        svg class=(class) width=(W) height="12" viewBox=(format!("0 0 {W} 12")) role="img" aria-label=(label) {
            title { (label) }
            rect.track x="0" y="0" width=(W) height="12" rx="2" {}
            rect.fill x="0" y="0" width=(filled) height="12" rx="2" {}
        }
    }
}

/// A sparkline of `values` (oldest first) as inline SVG: one polyline scaled to the largest value, the last
/// point marked; `label` is its accessible name and tooltip.
pub fn sparkline(values: &[u64], label: &str) -> Markup {
    const W: usize = 90;
    const H: u64 = 18;
    let max = values.iter().copied().max().unwrap_or(0).max(1);
    let step = if values.len() > 1 {
        (W - 2) as f64 / (values.len() - 1) as f64
    } else {
        0.0
    };
    let point = |i: usize, v: u64| {
        (
            1.0 + i as f64 * step,
            (H - 1) as f64 - (v * (H - 2)) as f64 / max as f64,
        )
    };
    let mut points = String::new();
    for (i, v) in values.iter().enumerate() {
        let (x, y) = point(i, *v);
        let _ = write!(points, "{x:.1},{y:.1} ");
    }
    let last = values.len().checked_sub(1).map(|i| point(i, values[i]));
    html! {
        svg.spark width=(W) height=(H) viewBox=(format!("0 0 {W} {H}")) role="img" aria-label=(label) {
            title { (label) }
            line.base x1="0" y1=(H - 1) x2=(W) y2=(H - 1) {}
            polyline points=(points.trim_end()) {}
            @if let Some((x, y)) = last { circle cx=(format!("{x:.1}")) cy=(format!("{y:.1}")) r="1.8" {} }
        }
    }
}

/// A horizontal bar of `value` against `max` (inline SVG, no style attribute), with a tick at `threshold` when
/// given (the bar is marked `met` at or above it); `label` is its accessible name and tooltip.
pub fn bar(value: u64, max: u64, threshold: Option<u64>, label: &str) -> Markup {
    const W: u64 = 120;
    let max = max.max(threshold.unwrap_or(0)).max(1);
    let filled = (value.min(max) * W) / max;
    let class = match threshold {
        Some(t) if value >= t => "bar met",
        _ => "bar",
    };
    html! {
        svg class=(class) width=(W) height="10" viewBox=(format!("0 0 {W} 10")) role="img" aria-label=(label) {
            title { (label) }
            rect.track x="0" y="0" width=(W) height="10" rx="2" {}
            rect.fill x="0" y="0" width=(filled) height="10" rx="2" {}
            @if let Some(t) = threshold { line.tick x1=((t.min(max) * W) / max) y1="0" x2=((t.min(max) * W) / max) y2="10" {} }
        }
    }
}

/// `text` cut to at most `max` characters on one line (newlines as spaces), with `…` when cut.
pub fn short(text: &str, max: usize) -> String {
    let one: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(max + 1)
        .collect();
    if one.chars().count() > max {
        let mut cut: String = one.chars().take(max).collect();
        cut.push('…');
        cut
    } else {
        one
    }
}

/// Previous / next links of a list paged by position: each link is given when that page exists.
pub fn keyset_pager(prev: Option<String>, next: Option<String>) -> Markup {
    html! {
        nav.pager aria-label="pages" {
            @if let Some(p) = prev { a rel="prev" href=(p) { "← previous" } }
            @if let Some(n) = next { a rel="next" href=(n) { "next →" } }
        }
    }
}

/// Previous / next links of a paged list: `href(page)` builds a page's link.
pub fn pager(page: usize, has_next: bool, href: impl Fn(usize) -> String) -> Markup {
    html! {
        nav.pager aria-label="pages" {
            @if page > 0 { a rel="prev" href=(href(page - 1)) { "← previous" } }
            span { "page " (page + 1) }
            @if has_next { a rel="next" href=(href(page + 1)) { "next →" } }
        }
    }
}
