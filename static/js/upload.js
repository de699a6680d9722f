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

// Each chosen file and each measured text is checked as the server checks it
// (submissions/file_checks.py, submissions/names.py) when it changes and again before the
// upload starts, so that a file in the wrong field is said beside it at once rather than
// after a long upload. The server's checks stay the ones that count.
// A function, not a global constant: after a refused upload the page is written anew into the
// same window (below), and this script runs again there.
function uploadChecks(form) {
  const archiveSuffixes = form.dataset.archiveSuffixes.split(" ");
  const predictionSuffixes = form.dataset.predictionsSuffixes.split(" ");
  // A zip's member header or (empty) end record, gzip's magic number: as file_checks.py.
  const magic = [[0x50, 0x4b, 0x03, 0x04], [0x50, 0x4b, 0x05, 0x06], [0x1f, 0x8b]];

  function endsWith(name, suffixes) {
    const lower = name.toLowerCase();
    return suffixes.some(function (s) { return lower.endsWith(s); });
  }
  function opensAsArchive(file) {
    return file.slice(0, 4).arrayBuffer().then(function (buffer) {
      const head = new Uint8Array(buffer);
      return magic.some(function (m) { return m.every(function (b, i) { return head[i] === b; }); });
    });
  }
  // Where a benchmark's outputs are text there is no Output audio to send an archive to.
  function archiveMessage() {
    const audio = form.querySelector("[data-file-check=audio]");
    const option = form.querySelector("[data-kind-choice]").selectedOptions[0];
    if (!audio || !audio.hidden || !option) return form.dataset.archiveMessage;
    return "this is an archive: " + option.value + " takes " + option.dataset.help +
      ", no archive";
  }
  function tooLarge(file, field) {
    const limit = Number(field.dataset.maxBytes);
    return file.size > limit ? [file.name + ": " + file.size + " bytes is above the limit of " +
                                limit] : [];
  }
  function fileProblems(field) {
    const file = field.querySelector("input[type=file]").files[0];
    if (!file || field.hidden) return Promise.resolve([]);
    return opensAsArchive(file).then(function (archive) {
      if (field.dataset.fileCheck === "predictions") {
        return archive || endsWith(file.name, archiveSuffixes) ? [archiveMessage()]
          : tooLarge(file, field);
      }
      if (archive) return tooLarge(file, field);
      return [file.name + " is not an archive: Output audio takes a .zip or .tar.gz of the " +
              "output files" + (endsWith(file.name, predictionSuffixes)
                ? " (a predictions file goes under Predictions)" : "")];
    });
  }
  function textProblems(input) {
    // As the server measures it: normalised, in characters (code points), not UTF-16 units.
    const length = Array.from(input.value.normalize("NFKC").replace(/\s+/g, " ").trim()).length;
    const limit = Number(input.dataset.maxLength);
    return length > limit ? [input.dataset.label + " is " + length + " characters; the limit is " +
                             limit] : [];
  }
  function show(field, problems) {
    const list = field.querySelector("[data-check-errors]");
    list.replaceChildren.apply(list, problems.map(function (p) {
      const item = document.createElement("li");
      item.textContent = p;
      return item;
    }));
    list.hidden = problems.length === 0;
    return problems.length === 0;
  }
  function checkFile(field) {
    return fileProblems(field).then(function (problems) { return show(field, problems); });
  }
  function checkText(input) {
    return Promise.resolve(show(input.closest(".field"), textProblems(input)));
  }
  const files = Array.from(form.querySelectorAll("[data-file-check]"));
  const texts = Array.from(form.querySelectorAll("input[data-max-length]"));
  files.forEach(function (field) {
    field.querySelector("input[type=file]").addEventListener("change", function () {
      checkFile(field);
    });
  });
  texts.forEach(function (input) {
    input.addEventListener("input", function () { checkText(input); });
  });
  // Resolves to true when every field passes; the first that does not gets the focus.
  return function all() {
    return Promise.all(files.map(checkFile).concat(texts.map(checkText))).then(function (ok) {
      const first = form.querySelector("[data-check-errors]:not([hidden])");
      if (first) first.closest(".field").querySelector("input").focus();
      return ok.every(Boolean);
    });
  };
}

// Send the upload form with XMLHttpRequest so the page can show upload progress; the server
// answers with the status page (after a redirect) or with the form and its errors. Nothing
// is sent while a check above fails.
(function () {
  const form = document.getElementById("upload-form");
  if (!form) return;
  const box = document.getElementById("upload-progress");
  const bar = box.querySelector("progress");
  const label = box.querySelector(".label");
  const checked = uploadChecks(form);
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    checked().then(function (ok) { if (ok) send(); });
  });
  function send() {
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
  }
})();
