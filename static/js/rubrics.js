// A sample's rubric table (every vote, or every judge reply) is fetched when its <details>
// is first opened, so that a page of samples carries only their tallies. Without this script
// the summary is a link to the same table as a page of its own.
(function () {
  function load(details) {
    if (details.dataset.loaded) {
      return;
    }
    details.dataset.loaded = "loading";
    const body = details.querySelector(".rubrics-body");
    body.setAttribute("aria-busy", "true");
    body.innerHTML = '<p class="empty">loading&hellip;</p>';
    fetch(details.dataset.rubrics, {headers: {"HX-Request": "true"}, credentials: "same-origin"})
      .then((response) => {
        if (!response.ok) {
          throw new Error(`${response.status} ${response.statusText}`.trim());
        }
        return response.text();
      })
      .then((html) => {
        body.innerHTML = html;  // the site's own escaped template, fetched from this origin
        details.dataset.loaded = "done";
      })
      .catch((error) => {
        delete details.dataset.loaded;  // closing and opening again tries again
        body.innerHTML = "";
        const failed = document.createElement("p");
        failed.className = "error";
        failed.textContent = `could not load the table (${error.message}): close and open to retry`;
        body.append(failed);
      })
      .finally(() => body.removeAttribute("aria-busy"));
  }

  // "toggle" does not bubble: listen in the capture phase, for samples htmx swaps in too.
  document.addEventListener("toggle", (event) => {
    const details = event.target;
    if (details instanceof HTMLDetailsElement && details.open && details.dataset.rubrics) {
      load(details);
    }
  }, true);

  // With the script, a plain click on the summary's link opens the table in place; a click
  // that asks for a new tab or window follows the link.
  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element && event.target.closest("a.rubrics-link");
    if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey
        || event.altKey) {
      return;
    }
    const details = link.closest("details");
    if (details) {
      event.preventDefault();
      details.open = !details.open;
    }
  });
})();
