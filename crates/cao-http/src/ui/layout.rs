//! The page shell every UI page shares (head, navigation, footer), the error and sign-in pages, and small
//! rendering helpers (the view gauge, bars, short text). Everything goes through maud, which escapes every
//! interpolated value; no helper here emits raw markup built from data.

use super::Ctx;
use super::csrf;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

/// The navigation: one row per page (path, label). A new page is one more row here and its route in
/// [`super::ui_router`].
pub const NAV: &[(&str, &str)] = &[
    ("/ui", "Containers"),
    ("/ui/memories", "Browse"),
    ("/ui/relationships", "Relationships"),
    ("/ui/lint", "Lint & heal"),
    ("/ui/journal", "Journal"),
];

/// The shell around `body`, with `active` the [`NAV`] path to mark.
fn shell(title: &str, active: Option<&str>, who: Option<&str>, auth_on: bool, body: Markup) -> Markup {
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
                        @for (path, label) in NAV {
                            a href=(path) aria-current=[(active == Some(*path)).then_some("page")] { (label) }
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
    let markup = shell(title, active, who.as_deref(), ctx.auth_on, body);
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
        axum::response::Html(shell("Error", None, None, false, body).into_string()),
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
        axum::response::Html(shell("Sign in", None, None, true, body).into_string()),
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
