// cao memory UI: progressive enhancement, plain JavaScript, no dependencies, served from /ui/static/ui.js.
// Every page works without this script while auth is off. The script adds:
// - auth: the bearer token entered on the sign-in page is kept in this tab's sessionStorage and sent as an
//   Authorization header with every navigation and form of the UI (fetched, then swapped into the page);
// - zoom: a journal line (<details data-zoom>) loads the lines it was made from in place when opened;
// - live journal: the journal list ([data-live]) refreshes every 5 s while no line is open.
// Pages are only ever inserted as parsed HTML from this server; nothing here builds markup from data.
(function () {
  'use strict';
  var KEY = 'cao.ui.token';

  function token() {
    try { return window.sessionStorage.getItem(KEY); } catch (e) { return null; }
  }
  function setToken(t) {
    try {
      if (t) { window.sessionStorage.setItem(KEY, t); } else { window.sessionStorage.removeItem(KEY); }
    } catch (e) { /* storage unavailable: the token lasts until the next navigation */ }
  }
  function withAuth(headers) {
    var h = headers || {};
    var t = token();
    if (t) { h.Authorization = 'Bearer ' + t; }
    return h;
  }
  function isUi(url) {
    return url.origin === window.location.origin && (url.pathname === '/ui' || url.pathname.indexOf('/ui/') === 0);
  }
  function parse(html) {
    return new window.DOMParser().parseFromString(html, 'text/html');
  }

  // Replace the page with a parsed answer and record the address.
  function swap(html, url, push) {
    var doc = parse(html);
    document.title = doc.title;
    document.body.replaceWith(document.adoptNode(doc.body));
    if (push) { window.history.pushState({ ui: true }, '', url); }
    window.scrollTo(0, 0);
    start();
  }

  function load(url, options, push) {
    var opts = options || {};
    opts.headers = withAuth(opts.headers);
    opts.credentials = 'same-origin';
    opts.redirect = 'follow';
    return window.fetch(url, opts).then(function (r) {
      if (r.status === 401) { setToken(null); }
      return r.text().then(function (text) { swap(text, r.url || url, push); });
    });
  }

  // With a token, links and forms of the UI go through fetch so that the header is sent.
  document.addEventListener('click', function (ev) {
    if (!token() || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) {
      return;
    }
    var a = ev.target.closest ? ev.target.closest('a[href]') : null;
    if (!a || a.target) { return; }
    var url = new URL(a.href, window.location.href);
    if (!isUi(url)) { return; }
    ev.preventDefault();
    load(url.href, {}, true);
  });

  document.addEventListener('submit', function (ev) {
    var form = ev.target;
    if (form.hasAttribute('data-token-form')) {
      ev.preventDefault();
      var input = form.querySelector('input[type=password]');
      setToken(input && input.value ? input.value.trim() : null);
      load(window.location.href, {}, false);
      return;
    }
    if (!token()) { return; }
    var url = new URL(form.getAttribute('action') || window.location.href, window.location.href);
    if (!isUi(url)) { return; }
    ev.preventDefault();
    var data = new window.URLSearchParams(new window.FormData(form));
    if ((form.getAttribute('method') || 'get').toLowerCase() === 'post') {
      load(url.href, {
        method: 'POST',
        body: data.toString(),
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' }
      }, true);
    } else {
      url.search = data.toString();
      load(url.href, {}, true);
    }
  });

  window.addEventListener('popstate', function () {
    if (token()) { load(window.location.href, {}, false); }
  });

  // Zoom: open a journal line to load its two children (or its entry) under it.
  document.addEventListener('toggle', function (ev) {
    var d = ev.target;
    if (!d || !d.open || !d.hasAttribute || !d.hasAttribute('data-zoom') || d.getAttribute('data-loaded')) { return; }
    d.setAttribute('data-loaded', 'loading');
    var target = d.querySelector('.zoom');
    window.fetch(d.getAttribute('data-zoom'), { headers: withAuth({}), credentials: 'same-origin' })
      .then(function (r) { return r.text().then(function (t) { return { ok: r.ok, text: t }; }); })
      .then(function (res) {
        if (!target) { return; }
        if (!res.ok) { d.removeAttribute('data-loaded'); return; }
        var doc = parse(res.text);
        target.replaceChildren.apply(target, Array.prototype.slice.call(doc.body.childNodes).map(function (n) {
          return document.adoptNode(n);
        }));
        d.setAttribute('data-loaded', 'yes');
      })
      .catch(function () { d.removeAttribute('data-loaded'); });
  }, true);

  var timer = null;
  function live() {
    var list = document.querySelector('[data-live]');
    if (!list || document.hidden || list.querySelector('details[open]')) { return; }
    window.fetch(list.getAttribute('data-live'), { headers: withAuth({}), credentials: 'same-origin' })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (text) {
        if (!text) { return; }
        var fresh = parse(text).querySelector('[data-live]');
        var current = document.querySelector('[data-live]');
        if (fresh && current && !current.querySelector('details[open]')) {
          current.replaceWith(document.adoptNode(fresh));
        }
      })
      .catch(function () { /* the next tick tries again */ });
  }

  function start() {
    if (timer) { window.clearInterval(timer); timer = null; }
    if (document.querySelector('[data-live]')) { timer = window.setInterval(live, 5000); }
    // A reload of a page while signed in: the server answered the sign-in page; fetch the page with the token.
    if (document.querySelector('[data-auth-required]') && token()) {
      load(window.location.href, {}, false);
    }
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
}());
