/* Documents: progressive enhancement only. Every page works without this file. */
(function () {
  "use strict";

  var POLL_MS = 1500;
  // While nothing on the list is moving: slow, but a reprocess from another tab or an
  // operator's retry still shows up without a reload.
  var IDLE_POLL_MS = 10000;
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

  function setText(element, text) {
    if (element && element.textContent !== (text || "")) {
      element.textContent = text || "";
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
        var error = new Error("HTTP " + response.status);
        error.status = response.status;
        throw error;
      }
      return response.json();
    });
  }

  /* Poll ``step`` while it resolves to a delay in ms (true: the usual one; false:
     stop); back off on errors, wait while the tab is hidden. */
  function poll(step) {
    var backoff = POLL_MS;
    var timer = null;
    function tick() {
      timer = null;
      if (document.hidden) {
        timer = window.setTimeout(tick, POLL_MS);
        return;
      }
      step().then(
        function (next) {
          backoff = POLL_MS;
          if (next) {
            timer = window.setTimeout(tick, next === true ? POLL_MS : next);
          }
        },
        function () {
          backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
          timer = window.setTimeout(tick, backoff);
        }
      );
    }
    timer = window.setTimeout(tick, POLL_MS);
    // A page restored by the Back button shows what it showed when left: look now.
    window.addEventListener("pageshow", function (event) {
      if (event.persisted) {
        window.clearTimeout(timer);
        tick();
      }
    });
  }

  /* Put the first page's picture in once it has been drawn. */
  function showThumbnail(box, url) {
    if (!box || !url || box.querySelector("img")) {
      return;
    }
    var image = document.createElement("img");
    image.alt = "";
    image.src = url;
    box.replaceChildren(image);
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
          // Untouched when unchanged: a banner written again is announced again.
          if (replacement && region.innerHTML !== replacement.innerHTML) {
            replaceKeepingFocus(region, replacement);
          }
        });
      });
  }

  var FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]";

  /* Rewrite a region; whoever had the keyboard's focus in it keeps it on the same
     control (same id or link, else the same place), not thrown back to the page's top. */
  function replaceKeepingFocus(region, replacement) {
    var focused = document.activeElement;
    var inside = focused && focused !== region && region.contains(focused);
    var place = inside
      ? Array.prototype.indexOf.call(region.querySelectorAll(FOCUSABLE), focused)
      : -1;
    var id = inside && focused.id;
    var href = inside && focused.getAttribute("href");
    region.innerHTML = replacement.innerHTML;
    if (!inside) {
      return;
    }
    var targets = Array.prototype.slice.call(region.querySelectorAll(FOCUSABLE));
    var target =
      targets.find(function (el) {
        return id ? el.id === id : href !== null && el.getAttribute("href") === href;
      }) ||
      targets[Math.min(place, targets.length - 1)] ||
      document.getElementById("main");
    if (target) {
      target.focus({ preventScroll: true });
    }
  }

  /* Document page: the status updates itself; the text appears when it is done. */
  // What a page still showing a document deleted meanwhile (another tab, another
  // person) says of it, rather than "Pending" for ever: "not found", as the page
  // would say (it may also be that the browser is now logged in as someone else).
  var GONE = { status: "gone", status_label: "Not found" };
  var panel = document.querySelector("[data-live-document][data-active]");
  if (panel) {
    poll(function () {
      return getJSON(panel.dataset.statusUrl).catch(function (error) {
        if (error.status !== 404) {
          throw error;
        }
        return Object.assign({ active: false, gone: true }, GONE);
      }).then(function (data) {
        updateBadge(panel.querySelector("[data-badge]"), data);
        // Written only when it changes: each write to a live region is read out again.
        setText(panel.querySelector("[data-status-help]"), data.status_help);
        setText(panel.querySelector("[data-progress]"), data.progress);
        if (data.active) {
          return true;
        }
        panel.removeAttribute("data-active");
        var hint = panel.querySelector("[data-live-hint]");
        if (hint) {
          hint.remove();
        }
        if (data.gone) {
          setText(
            panel.querySelector("[data-status-help]"),
            "It was deleted (in another tab, or by someone else), or this browser " +
              "is now logged in as someone else."
          );
          setText(panel.querySelector("[data-progress]"), "");
          return false;
        }
        return refreshRegions().then(function () {
          return false;
        });
      });
    });
  }

  /* Documents list: every badge on the page keeps itself current (a page holds at
     most a few dozen rows, so one bounded request covers them all). */
  var table = document.querySelector("[data-live-list]");
  if (table) {
    poll(function () {
      var rows = table.querySelectorAll("tr[data-document-id]:not([data-gone])");
      var query = Array.prototype.map
        .call(rows, function (row) {
          return "id=" + encodeURIComponent(row.dataset.documentId);
        })
        .join("&");
      return getJSON(table.dataset.statusesUrl + "?" + query).then(function (data) {
        // Every change in one announcement: each would cut off the one before.
        var changes = [];
        data.documents.forEach(function (doc) {
          var row = table.querySelector('tr[data-document-id="' + doc.id + '"]');
          if (!row) {
            return;
          }
          if (updateBadge(row.querySelector("[data-badge]"), doc)) {
            // The name the row shows: its title, if it has one.
            var shown = row.querySelector(".documents__name");
            changes.push(
              (shown ? shown.textContent : row.dataset.documentName) + ": " + doc.status_label
            );
          }
          setText(row.querySelector("[data-error-label]"), doc.error_label);
          row.toggleAttribute("data-active", doc.active);
          row.toggleAttribute("data-thumbnail-pending", doc.thumbnail_pending);
          showThumbnail(row.querySelector("[data-thumbnail]"), doc.thumbnail_url);
        });
        // A row the answer leaves out was deleted meanwhile: said so, and no longer
        // asked about or selectable.
        var found = data.documents.map(function (doc) {
          return String(doc.id);
        });
        Array.prototype.forEach.call(rows, function (row) {
          if (found.indexOf(row.dataset.documentId) !== -1) {
            return;
          }
          row.setAttribute("data-gone", "");
          row.removeAttribute("data-active");
          row.removeAttribute("data-thumbnail-pending");
          updateBadge(row.querySelector("[data-badge]"), GONE);
          setText(row.querySelector("[data-error-label]"), "");
          var shown = row.querySelector(".documents__name");
          changes.push(
            (shown ? shown.textContent : row.dataset.documentName) + ": " + GONE.status_label
          );
          var box = row.querySelector("input[name=id]");
          if (box) {
            box.checked = false;
            box.disabled = true;
            box.dispatchEvent(new Event("change"));
          }
        });
        var next = table.querySelector("tr[data-active], tr[data-thumbnail-pending]")
          ? POLL_MS
          : IDLE_POLL_MS;
        if (!changes.length) {
          return next;
        }
        announce(changes.join(". ") + ".");
        /* The status chips' counts follow the badges. */
        return refreshRegions().then(function () { return next; });
      });
    });
  }

  /* Documents list: select rows, select all, and say how many are selected. */
  var bulk = document.querySelector("[data-bulk-form]");
  if (bulk) {
    var all = bulk.querySelector("[data-select-all]");
    var boxes = bulk.querySelectorAll("input[name=id]");
    var live = function () {
      return bulk.querySelectorAll("input[name=id]:not(:disabled)");
    };
    var counter = bulk.querySelector("[data-selected-count]");
    var buttons = bulk.querySelectorAll("button[name=action]");
    var refresh = function () {
      var chosen = bulk.querySelectorAll("input[name=id]:checked:not(:disabled)").length;
      counter.textContent = chosen
        ? chosen + (chosen === 1 ? " document selected" : " documents selected")
        : "Select documents to act on them.";
      buttons.forEach(function (button) {
        button.disabled = chosen === 0;
      });
      all.checked = chosen > 0 && chosen === live().length;
      all.indeterminate = chosen > 0 && chosen < live().length;
    };
    all.addEventListener("change", function () {
      live().forEach(function (box) {
        box.checked = all.checked;
      });
      refresh();
    });
    boxes.forEach(function (box) {
      box.addEventListener("change", refresh);
    });
    refresh();
  }

  /* Messages: each can be dismissed; errors stay until the person closes them. */
  document.querySelectorAll(".messages .message").forEach(function (message) {
    var close = document.createElement("button");
    close.type = "button";
    close.className = "message__close";
    close.setAttribute("aria-label", "Dismiss");
    close.textContent = "×";
    close.addEventListener("click", function () {
      var list = message.parentNode;
      // The focus goes on to the next message's button, or to the content: a removed
      // button would leave it at the top of the page.
      var next = message.nextElementSibling || message.previousElementSibling;
      message.remove();
      if (!list.children.length) {
        list.remove();
      }
      var button = next && next.querySelector(".message__close");
      (button || document.getElementById("main")).focus();
    });
    message.append(close);
  });

  /* Upload: drag and drop onto the zone, and a list of what was chosen. */
  var form = document.querySelector("[data-upload-form]");
  if (form) {
    var input = form.querySelector("input[type=file]");
    var zone = form.querySelector("[data-dropzone]");
    var list = form.querySelector("[data-file-list]");
    var maxBytes = Number(form.dataset.maxBytes);
    var maxFiles = Number(form.dataset.maxFiles);
    var blocked = form.querySelector("[data-upload-blocked]");

    var formatSize = function (bytes) {
      if (bytes < 1024) {
        return bytes + " bytes";
      }
      if (bytes < 1048576) {
        return (bytes / 1024).toFixed(1) + " KB";
      }
      return (bytes / 1048576).toFixed(1) + " MB";
    };

    // A file over the size limit, or one too many, stops the whole upload (the
    // server refuses the request as it streams): say so before sending anything.
    var blocker = null;
    var showFiles = function () {
      list.innerHTML = "";
      blocker = null;
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
          info.textContent = formatSize(file.size) + ": too large";
          blocker = blocker || "“" + file.name + "” is over the limit of " +
            formatSize(maxBytes) + " for one file. Choose the files again without it.";
        } else if (maxFiles && index >= maxFiles) {
          item.className = "is-refused";
          info.textContent = "over the limit of " + maxFiles + " files";
          blocker = blocker || "You chose " + input.files.length +
            " files; at most " + maxFiles + " can be uploaded at once. Choose fewer.";
        }
        item.append(name, info);
        list.append(item);
      });
      list.hidden = input.files.length === 0;
      blocked.textContent = blocker ? "Nothing can be uploaded yet: " + blocker : "";
      blocked.hidden = !blocker;
    };

    // The last attempt's refusals no longer describe the files now chosen: gone, and
    // no longer read out with the field.
    var lastErrors = document.getElementById("upload-errors");
    var dropLastErrors = function () {
      if (lastErrors && input.files.length) {
        lastErrors.remove();
        lastErrors = null;
        input.removeAttribute("aria-invalid");
        input.setAttribute("aria-describedby", "upload-rules");
      }
    };
    input.addEventListener("change", function () {
      dropLastErrors();
      showFiles();
    });
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
        dropLastErrors();
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
    var button = form.querySelector("button[type=submit]");
    var label = button.textContent;
    form.addEventListener("submit", function (event) {
      if (blocker) {
        event.preventDefault();
        blocked.focus();
        return;
      }
      // Disabled after the submit has started, so the files are still sent.
      window.setTimeout(function () {
        button.disabled = true;
        button.textContent = "Uploading…";
      }, 0);
    });
    showFiles();
    // Back on this page, the browser may show it as it was left (its button
    // disabled) or put the chosen files back after this script ran: ready again.
    window.addEventListener("pageshow", function () {
      button.disabled = false;
      button.textContent = label;
      showFiles();
    });
  }
})();
