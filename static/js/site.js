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
