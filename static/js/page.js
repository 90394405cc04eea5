// Behaviour every page may use, without inline handlers (the Content-Security-Policy forbids them):
// <form data-ask="Question?"> asks before it is sent; <select data-autosubmit> sends its form; a
// request refused with a message (400, sent to #page-alert by slotwise/error_pages.bad_request) shows it.
document.addEventListener("submit", (event) => {
  const form = event.target.closest && event.target.closest("form[data-ask]");
  if (form && !window.confirm(form.dataset.ask)) event.preventDefault();
});
document.addEventListener("change", (event) => {
  if (event.target.matches && event.target.matches("select[data-autosubmit]")) event.target.form.requestSubmit();
});
document.addEventListener("htmx:beforeSwap", (event) => {
  const target = event.detail.target;
  if (event.detail.xhr.status === 400 && target && target.id === "page-alert") {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});
