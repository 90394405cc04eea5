// Blind labelling by keyboard: Enter moves to the next field (on the last, to the save button, so
// one more Enter saves), Alt+N types n/a
// and moves on, Ctrl+Enter saves and opens the next product, Alt+S skips it. Tab works as ever.
(function () {
  "use strict";
  const form = document.getElementById("blind-form");
  if (!form) return;
  const inputs = Array.from(form.querySelectorAll("input.blind-input"));
  const skip = document.getElementById("blind-skip");

  function next(input) {
    const i = inputs.indexOf(input);
    if (i >= 0 && i < inputs.length - 1) inputs[i + 1].focus();
    else document.getElementById("blind-save").focus();
  }

  const firstBad = form.querySelector("input[aria-invalid=true]");
  if (firstBad) firstBad.focus();

  document.addEventListener("keydown", function (event) {
    const input = event.target.closest ? event.target.closest("input.blind-input") : null;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    } else if (event.altKey && event.code === "KeyS" && skip) {
      event.preventDefault();
      window.location.href = skip.href;
    } else if (input && event.altKey && event.code === "KeyN") {
      event.preventDefault();
      input.value = "n/a";
      next(input);
    } else if (input && event.key === "Enter") {
      event.preventDefault();
      next(input);
    }
  });
})();
