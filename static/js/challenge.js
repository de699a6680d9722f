// A challenge's page: each <time data-local-time> shown in the visitor's local time (the page
// gives it in UTC and in the organizers' time zone), and a countdown to the next closing.

function localText(date) {
  return date.toLocaleString(undefined, {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
    timeZoneName: "short",
  });
}

function left(ms) {
  if (ms <= 0) {
    return "closed";
  }
  const s = Math.floor(ms / 1000);
  const days = Math.floor(s / 86400);
  const hours = Math.floor((s % 86400) / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  const seconds = s % 60;
  const pad = (n) => String(n).padStart(2, "0");
  return (days ? `${days} d ` : "") + `${pad(hours)}:${pad(minutes)}:${pad(seconds)}`;
}

document.addEventListener("DOMContentLoaded", () => {
  for (const element of document.querySelectorAll("time[data-local-time]")) {
    const date = new Date(element.getAttribute("datetime"));
    if (!Number.isNaN(date.getTime())) {
      element.title = element.textContent;
      element.textContent = localText(date);
    }
  }
  const counters = document.querySelectorAll("[data-countdown]");
  const tick = () => {
    for (const element of counters) {
      element.textContent = left(new Date(element.dataset.countdown).getTime() - Date.now());
    }
  };
  if (counters.length) {
    tick();
    setInterval(tick, 1000);
  }
});
