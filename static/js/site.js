// Behaviour every page shares, kept out of the HTML so that the Content-Security-Policy needs
// no inline script.

// A <select> or checkbox with data-autosubmit sends its form as soon as it changes;
// data-clears names a field of the form to empty first (a board's bucket belongs to the slice
// being left).
document.addEventListener("change", (event) => {
  const select = event.target;
  if (!(select instanceof HTMLSelectElement || select instanceof HTMLInputElement)
      || !select.hasAttribute("data-autosubmit")) {
    return;
  }
  const cleared = select.dataset.clears && select.form.elements.namedItem(select.dataset.clears);
  if (cleared) {
    cleared.value = "";
  }
  select.form.requestSubmit();
});

// A <details data-fold-narrow> (the board's secondary filters) is open as served, so that the
// page works without this script; on a phone's width it folds, unless one of its fields is
// set (a visitor must see what filters the table).
const narrow = window.matchMedia("(max-width: 760px)");
for (const details of document.querySelectorAll("details[data-fold-narrow]")) {
  const fields = [...details.querySelectorAll("select, input")];
  const set = fields.some((field) => (field.type === "checkbox" ? field.checked
                                      : field.value !== ""));
  if (narrow.matches && !set) {
    details.open = false;
  }
}

// A strip of tabs wider than the screen scrolls sideways (a phone's width): it opens with the
// current tab in view, not the first, and never moves the page.
for (const current of document.querySelectorAll("nav.tabs a.active")) {
  const strip = current.closest("nav.tabs");
  if (strip.scrollWidth <= strip.clientWidth) continue;
  const offset = current.getBoundingClientRect().left - strip.getBoundingClientRect().left;
  strip.scrollLeft += offset - (strip.clientWidth - current.offsetWidth) / 2;
}
