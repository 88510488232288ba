// Live updates for kubectl advisor dashboard. Every few seconds each region
// marked data-live is fetched again (from its data-live-src, or from this
// page's own address) and replaced when its content changed; nothing else
// on the page moves. Without JavaScript every page still reads fine.
(function () {
  'use strict';
  var meta = document.querySelector('meta[name="advisor-refresh"]');
  if (!meta || !window.fetch || !window.DOMParser) {
    return;
  }
  var every = parseInt(meta.content, 10) || 2000;
  var status = document.getElementById('live-status');
  var stopped = false;

  function say(text) {
    if (status && status.textContent !== text) {
      status.textContent = text;
    }
  }

  // regions groups the ids of the live regions by the address to read them from.
  function regions() {
    var bySrc = {};
    document.querySelectorAll('[data-live][id]').forEach(function (el) {
      var src = el.getAttribute('data-live-src') || (location.pathname + location.search);
      (bySrc[src] = bySrc[src] || []).push(el.id);
    });
    return bySrc;
  }

  // replace swaps a region's content, keeping the keyboard focus on the
  // same link or button if it was inside.
  function replace(old, fresh) {
    if (old.innerHTML === fresh.innerHTML) {
      return;
    }
    var active = document.activeElement;
    var key = active && old.contains(active) ? (active.getAttribute('href') || active.id) : null;
    old.innerHTML = fresh.innerHTML;
    if (key) {
      var again = old.querySelector('[href="' + CSS.escape(key) + '"]') || document.getElementById(key);
      if (again) {
        again.focus();
      }
    }
  }

  function read(src) {
    return fetch(src, { credentials: 'same-origin', cache: 'no-store', headers: { 'X-Advisor-Live': '1' } })
      .then(function (r) {
        return r.text().then(function (html) {
          return { src: src, code: r.status, html: html };
        });
      });
  }

  function tick() {
    if (document.hidden) {
      setTimeout(tick, every);
      return;
    }
    var bySrc = regions();
    Promise.all(Object.keys(bySrc).map(read)).then(function (answers) {
      answers.forEach(function (a) {
        if (a.code === 401) {
          stopped = true;
          say('Live updates stopped: this dashboard run has ended. Run kubectl advisor dashboard again and open the new address it prints.');
          return;
        }
        var doc = new DOMParser().parseFromString(a.html, 'text/html');
        bySrc[a.src].forEach(function (id) {
          var fresh = doc.getElementById(id);
          var old = document.getElementById(id);
          if (fresh && old) {
            replace(old, fresh);
          }
        });
      });
      if (!stopped) {
        say('');
        document.documentElement.setAttribute('data-live-at', String(Date.now()));
      }
    }).catch(function () {
      say('Live updates paused: the dashboard does not answer (was kubectl advisor dashboard stopped?). Retrying.');
    }).then(function () {
      if (!stopped) {
        setTimeout(tick, every);
      }
    });
  }

  setTimeout(tick, every);
})();
