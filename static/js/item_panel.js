// The item page (/b/<slug>/i/<key>/): the listening panel's verdict beside each of the judge's.
// The page is cached per board state and panel answers change without the board changing, so
// they are read from the panel API (GET /api/panel/<slug>/items/<key>/), which counts them as
// the judge card does and words them; this only places them in the cell each one names.

(() => {
  const note = document.getElementById("panel-note");
  if (!note) {
    return;
  }
  const status = document.getElementById("panel-status");

  function place(rubric) {
    const cell = document.getElementById(rubric.anchor);
    if (!cell) {
      return false; // a published submission not on this page of systems
    }
    const line = document.createElement("p");
    line.className = "panel-verdict";
    line.textContent = rubric.label;
    if (rubric.disagrees) {
      const mark = document.createElement("strong");
      mark.className = "disagrees";
      mark.textContent = "disagrees with the judge";
      line.append(" ", mark);
      cell.classList.add("disagreement");
    }
    cell.append(line);
    return true;
  }

  fetch(note.dataset.url, { headers: { Accept: "application/json" } })
    .then((response) => {
      if (!response.ok) {
        throw new Error(`the panel's verdicts could not be read (${response.status})`);
      }
      return response.json();
    })
    .then((body) => {
      const shown = body.rubrics.filter(place).length;
      const disagreeing = body.rubrics.filter((r) => r.disagrees && document.getElementById(r.anchor)).length;
      status.textContent = shown
        ? `${shown} verdict${shown === 1 ? "" : "s"} of the panel shown, ${disagreeing} disagreeing.`
        : "No panel answer on this page yet.";
      // The verdicts moved the cells since the browser went to the linked one: go there again.
      const target = location.hash && document.getElementById(location.hash.slice(1));
      if (target) {
        target.scrollIntoView({ block: "center" });
      }
    })
    .catch((error) => {
      status.textContent = error.message;
    });
})();
