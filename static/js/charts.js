// Charts on demand: a page embeds each figure as JSON (leaderboard/pages/charts.py, to_html)
// and shows its table first, with no chart library (1.5 MB gzipped) on a first visit. "Draw the
// charts" loads plotly.js (this script's data-plotly, cached for a year) and draws every figure
// of the page; the choice is remembered, so later visits draw them as the page loads. Without
// scripts, the figure's note says the table holds the same figures.
(() => {
  const source = document.currentScript && document.currentScript.dataset.plotly;
  const KEY = "charts";
  let loading = null;

  function library() {
    if (window.Plotly) return Promise.resolve();
    if (!loading) {
      loading = new Promise((resolve, reject) => {
        const script = document.createElement("script");
        script.src = source;
        script.onload = resolve;
        script.onerror = () => { loading = null; reject(new Error("not loaded")); };
        document.head.append(script);
      });
    }
    return loading;
  }

  function holders() {
    return document.querySelectorAll("div.plotly-chart[data-figure]");
  }

  async function drawAll(buttons) {
    buttons.forEach((b) => { b.disabled = true; b.textContent = "Loading the chart library\u2026"; });
    try {
      await library();
    } catch (error) {
      buttons.forEach((b) => { b.disabled = false; b.textContent = "The chart library could not be loaded: try again"; });
      return;
    }
    for (const holder of holders()) {
      const figure = JSON.parse(document.getElementById(holder.dataset.figure).textContent);
      holder.classList.add("drawn");
      Plotly.newPlot(holder, figure.data, figure.layout, figure.config);
    }
    buttons.forEach((b) => b.remove());
  }

  document.addEventListener("DOMContentLoaded", () => {
    const found = [...holders()];
    if (!found.length || !source) return;
    const buttons = found.map((holder) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "secondary draw-charts";
      button.textContent = "Draw the charts";
      button.title = "loads the chart library (about 1.5 MB, once) and draws every chart of this page";
      holder.before(button);
      return button;
    });
    buttons.forEach((button) => button.addEventListener("click", () => {
      try { localStorage.setItem(KEY, "on"); } catch (error) { /* private mode: this visit */ }
      drawAll(buttons);
    }));
    let remembered = null;
    try { remembered = localStorage.getItem(KEY); } catch (error) { /* none */ }
    if (remembered === "on") drawAll(buttons);
  });
})();
