// A challenge's pages: each <time data-local-time> shown in the visitor's local time (the page
// gives it in UTC and in the organizers' time zone), each <time data-local> followed by it
// ("your time: ..."), and each [data-countdown] counting down to its instant (its data-done
// text once reached; refreshing the page then is left to the visitor).

function localText(date) {
  return date.toLocaleString(undefined, {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
    timeZoneName: "short",
  });
}

const pad = (n) => String(n).padStart(2, "0");

function left(ms, done) {
  if (ms <= 0) {
    return done || "closed";
  }
  const s = Math.floor(ms / 1000);
  const days = Math.floor(s / 86400);
  const hours = Math.floor((s % 86400) / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  const seconds = s % 60;
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
  for (const element of document.querySelectorAll("time[data-local]")) {
    const when = new Date(element.getAttribute("datetime"));
    if (!Number.isNaN(when.getTime())) {
      const local = document.createElement("span");
      local.className = "local-time";
      local.textContent = ` (your time: ${when.getFullYear()}-${pad(when.getMonth() + 1)}-` +
        `${pad(when.getDate())} ${pad(when.getHours())}:${pad(when.getMinutes())}:` +
        `${pad(when.getSeconds())})`;
      element.after(local);
    }
  }
  const counters = document.querySelectorAll("[data-countdown]");
  const tick = () => {
    for (const element of counters) {
      element.textContent = left(new Date(element.dataset.countdown).getTime() - Date.now(),
                                 element.dataset.done);
    }
  };
  if (counters.length) {
    tick();
    setInterval(tick, 1000);
  }
});
