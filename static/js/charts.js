// Draws each figure a page embeds as JSON (leaderboard/pages/charts.py, to_html) with plotly.js,
// which the page loads before this script.
document.addEventListener("DOMContentLoaded", () => {
  for (const holder of document.querySelectorAll("div.plotly-chart[data-figure]")) {
    const figure = JSON.parse(document.getElementById(holder.dataset.figure).textContent);
    Plotly.newPlot(holder, figure.data, figure.layout, figure.config);
  }
});
