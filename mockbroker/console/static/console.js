// mockbroker console: redraws the page's live part while it is open, and sends the buttons' and forms'
// actions to the control API's own routes.  Everything it puts on the page is server-escaped HTML or textContent.
"use strict";
(function () {
  const PERIOD_MS = 1000;
  const live = document.getElementById("live");
  const toggle = document.getElementById("live-toggle");
  const stateLine = document.getElementById("live-state");
  const result = document.getElementById("action-result");
  let timer = null;
  let busy = false;

  if (toggle) {
    toggle.checked = localStorage.getItem("mockbroker.live") !== "off";
    toggle.addEventListener("change", () => {
      localStorage.setItem("mockbroker.live", toggle.checked ? "on" : "off");
      schedule();
    });
  }

  async function refresh() {
    if (busy || !live) return;
    busy = true;
    try {
      const response = await fetch(location.href, { headers: { "X-Console-Part": "live" }, cache: "no-store" });
      const text = await response.text();
      if (text !== live.dataset.last) {
        live.innerHTML = text;
        live.dataset.last = text;
      }
      stateLine.textContent = "updated " + new Date().toLocaleTimeString();
    } catch (err) {
      stateLine.textContent = "broker unreachable (" + err.message + ")";
    } finally {
      busy = false;
    }
  }

  function schedule() {
    clearInterval(timer);
    timer = null;
    if (toggle && toggle.checked && document.visibilityState === "visible") timer = setInterval(refresh, PERIOD_MS);
  }
  document.addEventListener("visibilitychange", schedule);

  function say(text, ok) {
    result.textContent = text;
    result.className = ok ? "ok" : "bad";
  }

  async function call(api, body) {
    const space = api.indexOf(" ");
    const method = api.slice(0, space), path = api.slice(space + 1);
    const options = { method: method, headers: {} };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    const response = await fetch(path, options);
    let answer = null;
    const text = await response.text();
    try { answer = text ? JSON.parse(text) : null; } catch (err) { answer = null; }
    if (!response.ok) {
      say(method + " " + path + ": " + ((answer && answer.error) || response.status + " " + response.statusText), false);
      return false;
    }
    let what = method + " " + path + ": done";
    if (answer && answer.id !== undefined) what += " (fault " + answer.id + ")";
    if (answer && answer.detail) what += " (" + answer.detail + ")";
    say(what, true);
    refresh();
    return true;
  }

  function formBody(form) {
    const numbers = (form.dataset.numbers || "").split(",");
    const body = {};
    if (form.dataset.action) body.action = form.dataset.action;
    for (const input of form.querySelectorAll("input, select")) {
      const value = input.value.trim();
      if (!input.name || value === "") continue;
      if (value === "null") body[input.name] = null;
      else body[input.name] = numbers.includes(input.name) && !isNaN(Number(value)) ? Number(value) : value;
    }
    return body;
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-api]");
    if (!button) return;
    event.preventDefault();
    call(button.dataset.api, button.dataset.body ? JSON.parse(button.dataset.body) : undefined);
  });
  document.addEventListener("submit", (event) => {
    const form = event.target.closest("form[data-api]");
    if (!form) return;
    event.preventDefault();
    call(form.dataset.api, formBody(form));
  });

  if (live) live.dataset.last = live.innerHTML;
  schedule();
})();
