// The review queue by keyboard: move between values, accept, edit, reject, n/a, undo, export.
// Every key only presses the row's own buttons, so keyboard and mouse take the same path.
(function () {
  "use strict";

  // A conflict (409) or bad input (400) comes back as the row with its message: show it.
  htmx.config.responseHandling = [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "40[09]", swap: true, error: false },
    { code: "[45]..", swap: false, error: true },
  ];

  let keys = {};
  let active = 0;

  const rows = () => Array.from(document.querySelectorAll("#value-list .vrow"));
  const current = () => rows()[active] || null;

  function toast(text) {
    const box = document.getElementById("review-status");
    if (!box) return;
    box.textContent = text;
    box.classList.add("show");
    clearTimeout(box._timer);
    box._timer = setTimeout(() => box.classList.remove("show"), 2600);
  }

  function activate(index, scroll = true) {
    const all = rows();
    if (!all.length) return;
    active = Math.max(0, Math.min(index, all.length - 1));
    all.forEach((row, i) => {
      row.classList.toggle("active", i === active);
      row.setAttribute("aria-selected", i === active ? "true" : "false");
    });
    const row = all[active];
    const panel = document.getElementById("doc-panel");
    const doc = row.querySelector("template.doc");
    if (panel && doc) {
      panel.replaceChildren(doc.content.cloneNode(true));
      panel.classList.remove("muted");
      const mark = panel.querySelector("mark");
      if (mark) mark.scrollIntoView({ block: "nearest" });
    }
    if (scroll) row.scrollIntoView({ block: "nearest" });
  }

  function press(act) {
    const row = current();
    // One change at a time per value: a second key while the first is on its way would only conflict.
    if (!row || row.classList.contains("htmx-request")) return;
    const button = row.querySelector(`[data-act="${act}"]`);
    // A click, not requestSubmit: htmx learns which button submitted from the click.
    if (button && button.tagName === "BUTTON" && button.type === "submit") button.click();
  }

  // The edit box holds a text input, or a select where the type allows a list of values only
  // (letters and arrows pick a value there, Enter saves as in the text input).
  const editField = (box) => box.querySelector("input, select");

  function startEdit() {
    const row = current();
    if (!row) return;
    const box = row.querySelector(".edit-box");
    box.hidden = false;
    const field = editField(box);
    field.focus();
    if (field.tagName === "INPUT") field.select();
  }

  function stopEdit(row) {
    const box = row.querySelector(".edit-box");
    const field = editField(box);
    if (field.tagName === "SELECT") {
      Array.from(field.options).forEach((option) => { option.selected = option.defaultSelected; });
    } else {
      field.value = field.defaultValue;
    }
    field.blur();
    box.hidden = true;
    row.focus({ preventScroll: true });
  }

  // The bulk banner's Undo takes back the reviewer's last change, as the undo key does: once a row
  // has changed since, that is no longer the bulk action the banner names, so the button goes.
  function dropBulkUndo() {
    const button = document.getElementById("undo-bulk");
    if (button) button.form.remove();
  }

  function goPage(id) {
    const link = document.getElementById(id);
    if (link) link.click();
  }

  function undo() {
    const app = document.getElementById("review-app");
    // the rows on this page: an undo of a value elsewhere says so instead of changing it unseen
    const onPage = rows().map((row) => row.id.replace("value-", "")).join(",");
    htmx.ajax("POST", app.dataset.undoUrl, { source: app, target: app, swap: "none", values: { on_page: onPage } });
  }

  const handlers = {
    next: () => activate(active + 1),
    prev: () => activate(active - 1),
    accept: () => press("accept"),
    reject: () => press("reject"),
    na: () => press("na"),
    edit: startEdit,
    undo: undo,
    history: () => { const a = current() && current().querySelector('[data-act="history"]'); if (a) window.location = a.href; },
    export: () => { const f = document.getElementById("export-form"); if (f) f.requestSubmit(); },
    next_page: () => goPage("next-page"),
    prev_page: () => goPage("prev-page"),
    help: () => { const s = document.getElementById("shortcuts"); if (s) s.hidden = !s.hidden; },
  };

  function onKey(event) {
    const target = event.target;
    if (target.closest && target.closest(".edit-box")) {
      const row = target.closest(".vrow");
      if (event.key === "Enter") {
        event.preventDefault();
        row.querySelector("button.save").click();
      } else if (event.key === "Escape") {
        event.preventDefault();
        stopEdit(row);
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (["INPUT", "SELECT", "TEXTAREA"].includes(target.tagName)) {
      // Escape leaves a filter field and hands the keys back to the queue.
      if (event.key === "Escape") { target.blur(); activate(active); }
      return;
    }
    for (const [action, key] of Object.entries(keys)) {
      if (event.key === key && handlers[action]) {
        event.preventDefault();
        handlers[action]();
        return;
      }
    }
  }

  function rowIndex(el) {
    return rows().indexOf(el);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const data = document.getElementById("review-keys");
    keys = data ? JSON.parse(data.textContent) : {};
    activate(0, false);
    document.addEventListener("keydown", onKey);

    document.body.addEventListener("click", (event) => {
      const edit = event.target.closest('[data-act="edit"]');
      const row = event.target.closest(".vrow");
      if (row) activate(rowIndex(row), false);
      if (edit) startEdit();
    });

    document.body.addEventListener("submit", (event) => {
      const message = event.target.dataset && event.target.dataset.confirm;
      if (message && !window.confirm(message)) event.preventDefault();
    }, true);

    // A row came back from an action: stay on it when it carries a message, else move on.
    document.body.addEventListener("htmx:afterSettle", (event) => {
      const el = event.detail.elt;
      if (el && el.id === "queue-body") {
        // A new filter: the cursor starts on row 1. After settling, not after swapping: while it
        // settles htmx gives rows that kept their id the old row's attributes, and then takes them
        // back, which took the cursor's "active" away again (the first j then skipped row 1).
        activate(0);
        // Left on the filter's select, the keys would go to the select instead of the queue.
        const focused = document.activeElement;
        if (current() && focused && focused.closest && focused.closest("#filters")) {
          focused.blur();
          current().focus({ preventScroll: true });
        }
        return;
      }
      const row = el;
      if (!row || !row.classList || !row.classList.contains("vrow")) return;
      const index = rowIndex(row);
      if (index < 0) return;
      if (row.dataset.outcome !== "ok") {
        activate(index);
        const box = row.querySelector(".edit-box");
        // What they typed is still in the edit box: show it, so it can be saved again.
        if (row.dataset.attempted) box.hidden = false;
        return;
      }
      dropBulkUndo();
      if (index === active) activate(index + 1 < rows().length ? index + 1 : index);
    });

    document.body.addEventListener("review-message", (event) => toast(event.detail.text));
    document.body.addEventListener("review-focus", (event) => {
      const row = document.getElementById(`value-${event.detail.id}`);
      if (row) activate(rowIndex(row));
    });
    document.body.addEventListener("htmx:targetError", () => window.location.reload());
  });
})();
