// The compare page's model picker searches as one types: the board's models matching the
// search come from a small JSON endpoint (at most 20), and the boxes already picked stay, in
// the order picked. Without this script the form's Search button runs the same search.
(function () {
  const form = document.getElementById("compare-form");
  const search = document.getElementById("picker-q");
  const choices = document.getElementById("picker-choices");
  const count = document.getElementById("picker-count");
  if (!form || !search || !choices || !form.dataset.search) {
    return;
  }
  let asked = 0;  // the latest search sent: an older answer arriving late is dropped
  let timer = null;

  function box(result) {
    const label = document.createElement("label");
    const input = document.createElement("input");
    input.type = "checkbox";
    input.name = "models";
    input.value = String(result.id);
    const name = document.createElement("span");
    name.className = "cut name";
    name.title = result.model;
    label.title = result.organisation ? `${result.model} (${result.organisation})` : result.model;
    name.textContent = result.model;
    label.append(input, " ", name);
    if (result.organisation) {
      const organisation = document.createElement("small");
      organisation.className = "cut";
      organisation.textContent = result.organisation;
      label.append(" ", organisation);
    }
    return label;
  }

  function show(data) {
    const picked = [...choices.querySelectorAll("label")].filter(
      (label) => label.querySelector("input:checked"));
    const kept = new Set(picked.map((label) => label.querySelector("input").value));
    const found = data.results.filter((result) => !kept.has(String(result.id))).map(box);
    picked.forEach((label) => label.classList.add("picked"));
    choices.replaceChildren(...picked, ...found);
    count.textContent = data.note;
  }

  function find() {
    const number = ++asked;
    const url = `${form.dataset.search}?${new URLSearchParams({q: search.value})}`;
    fetch(url, {headers: {Accept: "application/json"}, credentials: "same-origin"})
      .then((response) => response.json().then((data) => {
        if (!response.ok) {
          throw new Error((data.errors || [response.statusText]).join("; "));
        }
        return data;
      }))
      .then((data) => {
        if (number === asked) {
          show(data);
        }
      })
      .catch((error) => {
        if (number === asked) {
          count.textContent = `The search failed: ${error.message}`;
        }
      });
  }

  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(find, 250);
  });
})();
