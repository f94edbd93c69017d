// The live feed: server-sent events from /api/live, newest on top, at most KEEP of each kind.
"use strict";
(function () {
  const KEEP = 100;
  const state = document.getElementById("live-state");
  const lists = { sighting: document.getElementById("live-sightings"), alert: document.getElementById("live-alerts") };

  function item(kind, data) {
    const li = document.createElement("li");
    li.className = kind;
    li.dataset.id = kind === "alert" ? data.alert_id : data.sighting_id;
    if (data.picture) {
      const img = document.createElement("img");
      img.className = "plate"; img.alt = "plate " + (data.text || data.candidate); img.loading = "lazy"; img.src = data.picture;
      img.onerror = function () { img.remove(); };
      li.appendChild(img);
    }
    const link = document.createElement(data.url ? "a" : "span");
    if (data.url) link.href = data.url;
    link.className = "text";
    link.textContent = kind === "alert" ? data.plate : data.text;
    li.appendChild(link);
    const what = document.createElement("span");
    what.textContent = kind === "alert"
      ? "on " + data.list + (data.label ? " (" + data.label + ")" : "") + " · read " + data.candidate + " · " + data.camera_id
      : data.camera_id + (data.zone ? " / " + data.zone : "") + (data.direction ? " · " + data.direction : "");
    li.appendChild(what);
    const when = document.createElement("time");
    const at = kind === "alert" ? data.alerted_at : data.last_seen;
    when.dateTime = at; when.textContent = new Date(at).toLocaleString();
    li.appendChild(when);
    return li;
  }

  function add(kind, event) {
    const list = lists[kind];
    list.prepend(item(kind, JSON.parse(event.data)));
    while (list.children.length > KEEP) list.lastElementChild.remove();
  }

  const source = new EventSource("/api/live");
  source.addEventListener("open", function () { state.textContent = "live"; });
  source.addEventListener("error", function () { state.textContent = "reconnecting…"; });
  source.addEventListener("sighting", function (e) { add("sighting", e); });
  source.addEventListener("alert", function (e) { add("alert", e); });
})();
