// The console's one script: small conveniences over pages that work without it.
"use strict";

// A form or button with data-confirm asks first (the write actions use it).
document.addEventListener("submit", (event) => {
  const form = event.target;
  const button = event.submitter;
  const question = (button && button.dataset.confirm) || form.dataset.confirm;
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

// nahida.api(path, {method, body}): the JSON API with the page's CSRF token on changes.
window.nahida = {
  async api(path, options = {}) {
    const method = options.method || "GET";
    const headers = { Accept: "application/json" };
    if (method !== "GET") {
      const meta = document.querySelector('meta[name="csrf-token"]');
      headers["X-CSRF-Token"] = meta ? meta.content : "";
      headers["Content-Type"] = "application/json";
    }
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const response = await fetch(path, { method, headers, body, credentials: "same-origin" });
    const data = await response.json();
    if (!response.ok) {
      throw new Error(data.error || response.statusText);
    }
    return data;
  },
};

// Times are shown in the bot's zone; a hover shows the reader's own.
for (const stamp of document.querySelectorAll("time[datetime]")) {
  const moment = new Date(stamp.getAttribute("datetime"));
  if (!Number.isNaN(moment.getTime())) {
    stamp.title = moment.toLocaleString();
  }
}
