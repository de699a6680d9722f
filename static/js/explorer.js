// The bucket list shows the buckets of the chosen dimension only; picking another dimension
// selects its first bucket. Without this script the server takes the first bucket itself.
(function () {
  const dimension = document.getElementById("explorer-dimension");
  const bucket = document.getElementById("explorer-bucket");
  function sync(reset) {
    let first = null;
    for (const group of bucket.querySelectorAll("optgroup")) {
      const on = group.dataset.dimension === dimension.value;
      group.hidden = group.disabled = !on;
      if (on) first = group.querySelector("option");
    }
    bucket.disabled = !dimension.value;
    bucket.closest("label").hidden = !dimension.value;
    const current = bucket.selectedOptions[0];
    if (first && (reset || !current || current.parentElement !== first.parentElement)) {
      first.selected = true;
    }
  }
  dimension.addEventListener("change", () => sync(true));
  sync(false);
})();
