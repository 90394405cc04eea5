// Keyboard voting: 1 A better, 2 B better, 3 tie, 4 both bad; C writes a comment, Esc leaves it.
// The panel is swapped by htmx after each vote, so the listener sits on the document and looks the
// buttons up at the moment a key is pressed.
(function () {
  "use strict";
  var busy = false;

  document.addEventListener("htmx:beforeRequest", function () { busy = true; });
  document.addEventListener("htmx:afterRequest", function () { busy = false; });

  document.addEventListener("keydown", function (event) {
    var form = document.getElementById("vote-form");
    if (!form || event.altKey || event.ctrlKey || event.metaKey) return;
    var target = event.target;
    var typing = target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT");
    if (typing) {
      if (event.key === "Escape") target.blur();
      return;  // digits typed in the comment are text, not votes
    }
    if (event.key === "c" || event.key === "C") {
      event.preventDefault();
      document.getElementById("vote-comment").focus();
      return;
    }
    var button = form.querySelector('button[data-key="' + event.key + '"]');
    if (!button) return;
    event.preventDefault();
    if (busy) return;  // one vote at a time: a held key must not vote on the next item too
    button.classList.add("pressed");
    button.click();
  });
})();
