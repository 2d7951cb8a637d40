/* Documents: progressive enhancement only. Every page works without this file. */
(function () {
  "use strict";

  var POLL_MS = 1500;
  var MAX_BACKOFF_MS = 15000;

  document.documentElement.classList.add("js");
  document.querySelectorAll("[data-js-only]").forEach(function (el) {
    el.hidden = false;
  });

  function announce(text) {
    var region = document.querySelector("[data-announcer]");
    if (region) {
      region.textContent = text;
    }
  }

  function updateBadge(badge, data) {
    if (!badge || badge.dataset.status === data.status) {
      return false;
    }
    badge.className = "badge badge--" + data.status;
    badge.dataset.status = data.status;
    badge.textContent = data.status_label;
    return true;
  }

  function getJSON(url) {
    return fetch(url, {
      headers: { Accept: "application/json" },
      credentials: "same-origin",
      cache: "no-store",
    }).then(function (response) {
      if (!response.ok) {
        throw new Error("HTTP " + response.status);
      }
      return response.json();
    });
  }

  /* Poll ``step`` until it resolves to false; back off on errors, pause while hidden. */
  function poll(step) {
    var delay = POLL_MS;
    function tick() {
      if (document.hidden) {
        window.setTimeout(tick, POLL_MS);
        return;
      }
      step().then(
        function (again) {
          delay = POLL_MS;
          if (again) {
            window.setTimeout(tick, delay);
          }
        },
        function () {
          delay = Math.min(delay * 2, MAX_BACKOFF_MS);
          window.setTimeout(tick, delay);
        }
      );
    }
    window.setTimeout(tick, POLL_MS);
  }

  /* Swap the page's live regions for fresh ones, without reloading the page. */
  function refreshRegions() {
    return fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        return response.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live-region][id]").forEach(function (region) {
          var replacement = fresh.getElementById(region.id);
          if (replacement) {
            region.innerHTML = replacement.innerHTML;
          }
        });
      });
  }

  /* Document page: the status updates itself; the text appears when it is done. */
  var panel = document.querySelector("[data-live-document][data-active]");
  if (panel) {
    poll(function () {
      return getJSON(panel.dataset.statusUrl).then(function (data) {
        updateBadge(panel.querySelector("[data-badge]"), data);
        var help = panel.querySelector("[data-status-help]");
        if (help) {
          help.textContent = data.status_help;
        }
        if (data.active) {
          return true;
        }
        panel.removeAttribute("data-active");
        var hint = panel.querySelector("[data-live-hint]");
        if (hint) {
          hint.remove();
        }
        return refreshRegions().then(function () {
          return false;
        });
      });
    });
  }

  /* Documents list: badges of unfinished documents update themselves. */
  var table = document.querySelector("[data-live-list]");
  if (table && table.querySelector("tr[data-active]")) {
    poll(function () {
      var rows = table.querySelectorAll("tr[data-active]");
      var query = Array.prototype.map
        .call(rows, function (row) {
          return "id=" + encodeURIComponent(row.dataset.documentId);
        })
        .join("&");
      return getJSON(table.dataset.statusesUrl + "?" + query).then(function (data) {
        data.documents.forEach(function (doc) {
          var row = table.querySelector('tr[data-document-id="' + doc.id + '"]');
          if (!row) {
            return;
          }
          if (updateBadge(row.querySelector("[data-badge]"), doc)) {
            announce(row.dataset.documentName + ": " + doc.status_label);
          }
          if (!doc.active) {
            row.removeAttribute("data-active");
          }
        });
        return table.querySelector("tr[data-active]") !== null;
      });
    });
  }

  /* Upload: drag and drop onto the zone, and a list of what was chosen. */
  var form = document.querySelector("[data-upload-form]");
  if (form) {
    var input = form.querySelector("input[type=file]");
    var zone = form.querySelector("[data-dropzone]");
    var list = form.querySelector("[data-file-list]");
    var maxBytes = Number(form.dataset.maxBytes);
    var maxFiles = Number(form.dataset.maxFiles);

    var formatSize = function (bytes) {
      if (bytes < 1024) {
        return bytes + " bytes";
      }
      if (bytes < 1048576) {
        return (bytes / 1024).toFixed(1) + " KB";
      }
      return (bytes / 1048576).toFixed(1) + " MB";
    };

    var showFiles = function () {
      list.innerHTML = "";
      Array.prototype.forEach.call(input.files, function (file, index) {
        var item = document.createElement("li");
        var name = document.createElement("span");
        var info = document.createElement("span");
        name.textContent = file.name;
        info.textContent = formatSize(file.size);
        if (file.size === 0) {
          item.className = "is-refused";
          info.textContent = "empty: it will be refused";
        } else if (maxBytes && file.size > maxBytes) {
          item.className = "is-refused";
          info.textContent = formatSize(file.size) + ": too large, it will be refused";
        } else if (maxFiles && index >= maxFiles) {
          item.className = "is-refused";
          info.textContent = "over the limit of " + maxFiles + " files";
        }
        item.append(name, info);
        list.append(item);
      });
      list.hidden = input.files.length === 0;
    };

    input.addEventListener("change", showFiles);
    ["dragenter", "dragover"].forEach(function (type) {
      zone.addEventListener(type, function (event) {
        event.preventDefault();
        zone.classList.add("is-dragover");
      });
    });
    ["dragleave", "drop"].forEach(function (type) {
      zone.addEventListener(type, function () {
        zone.classList.remove("is-dragover");
      });
    });
    zone.addEventListener("drop", function (event) {
      event.preventDefault();
      if (event.dataTransfer && event.dataTransfer.files.length) {
        input.files = event.dataTransfer.files;
        showFiles();
      }
    });
    // A file dropped just beside the zone must not make the browser open it instead.
    ["dragover", "drop"].forEach(function (type) {
      window.addEventListener(type, function (event) {
        if (!zone.contains(event.target)) {
          event.preventDefault();
        }
      });
    });
    form.addEventListener("submit", function () {
      var button = form.querySelector("button[type=submit]");
      // Disabled after the submit has started, so the files are still sent.
      window.setTimeout(function () {
        button.disabled = true;
        button.textContent = "Uploading…";
      }, 0);
    });
    showFiles();
  }
})();
