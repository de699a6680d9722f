// The upload form shows only the fields of the chosen benchmark's kind: the archive of output
// files where outputs are files, each upload option where the kind reads it, and what the
// predictions file holds. Without this script every field shows and the server checks them.
(function () {
  const choice = document.querySelector("[data-kind-choice]");
  if (!choice) return;
  function show() {
    const option = choice.selectedOptions[0];
    if (!option) return;
    const options = (option.dataset.options || "").split(" ");
    document.querySelectorAll("[data-kind-files]").forEach(function (field) {
      field.hidden = option.dataset.files !== "1";
      if (field.hidden) field.querySelectorAll("input").forEach(function (i) { i.value = ""; });
    });
    document.querySelectorAll("[data-kind-option]").forEach(function (field) {
      field.hidden = options.indexOf(field.dataset.kindOption) < 0;
      if (field.hidden) field.querySelectorAll("input").forEach(function (i) { i.checked = false; });
    });
    document.querySelectorAll("[data-kind-help]").forEach(function (help) {
      help.textContent = "Upload " + option.dataset.help + ".";
    });
  }
  choice.addEventListener("change", show);
  show();
})();

// Send the upload form with XMLHttpRequest so the page can show upload progress; the server
// answers with the status page (after a redirect) or with the form and its errors.
(function () {
  const form = document.getElementById("upload-form");
  if (!form) return;
  const box = document.getElementById("upload-progress");
  const bar = box.querySelector("progress");
  const label = box.querySelector(".label");
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const request = new XMLHttpRequest();
    const started = Date.now();
    box.hidden = false;
    form.querySelector("button[type=submit]").disabled = true;
    request.upload.addEventListener("progress", function (e) {
      if (!e.lengthComputable) return;
      const share = e.loaded / e.total;
      const seconds = (Date.now() - started) / 1000;
      const eta = share > 0 ? Math.round(seconds / share - seconds) : null;
      bar.value = 100 * share;
      label.textContent = (100 * share).toFixed(0) + "% uploaded" +
        (eta !== null && share < 1 ? ", about " + eta + " s left" : ", checking…");
    });
    request.addEventListener("load", function () {
      if (request.status < 300 && request.responseURL !== window.location.href) {
        window.location.assign(request.responseURL);
      } else {
        document.open();
        document.write(request.responseText);
        document.close();
      }
    });
    request.addEventListener("error", function () {
      label.textContent = "The upload failed (connection lost). Try again.";
      form.querySelector("button[type=submit]").disabled = false;
    });
    request.open("POST", form.action || window.location.href);
    request.send(new FormData(form));
  });
})();
