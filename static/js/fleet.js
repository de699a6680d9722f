// The fleet page's stats refresh replaces the take-out forms: skip it while staff are typing
// a reason, so nothing typed is lost. (A listener rather than an hx-trigger filter, which
// htmx would evaluate as code.)
document.addEventListener("htmx:beforeRequest", (event) => {
  const section = event.detail.elt;
  if (section.id !== "fleet-stats") {
    return;
  }
  const typing = section.contains(document.activeElement)
    || Array.from(section.querySelectorAll("input[name=reason]")).some((input) => input.value);
  if (typing) {
    event.preventDefault();
  }
});
