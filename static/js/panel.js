// The listening panel (/b/<slug>/panel/): ask the panel API for a task, show its texts, play its
// audio, count how long each audio was really heard (timeupdate while playing, never a seek),
// and unlock the choices once every audio was heard for the seconds the task asks (its length,
// or the panel's minimum when longer); a task without audio is answered once read. The server
// holds its own evidence: it takes an answer only once each audio, from the task's own address,
// was sent to this rater at least that long before (panel.services).

(() => {
  const root = document.getElementById("panel");
  if (!root) {
    return;
  }
  const status = document.getElementById("panel-status");
  const box = document.getElementById("panel-task");
  const audioBox = document.getElementById("panel-audio");
  const listen = document.getElementById("panel-listen");
  const texts = document.getElementById("panel-texts");
  const fieldset = document.getElementById("panel-choices");
  const options = document.getElementById("panel-options");
  const submit = document.getElementById("panel-submit");
  const error = document.getElementById("panel-error");
  const form = document.getElementById("panel-form");
  // What the server forgives of a sum of play-head steps (floating-point rounding).
  const SLACK = 0.01;
  // Seconds that passed beyond the play head's advances, carried to later ones (count below).
  const CARRY = 0.5;
  // What a clip's end may count beyond the clock: a coarse clock's step (Firefox rounds
  // performance.now() to as much as 100 ms when resisting fingerprinting).
  const END_GRACE = 0.25;
  let task = null;
  let heard = {};

  const csrf = () => form.querySelector("input[name=csrfmiddlewaretoken]").value;

  function unlockIfHeard() {
    const ready = Object.keys(task.listen).every((label) => heard[label] + SLACK >= task.listen[label]);
    fieldset.disabled = !ready;
    submit.disabled = !ready || !form.querySelector("input[name=choice]:checked");
    document.querySelectorAll(".panel-heard").forEach((note) => {
      const label = note.dataset.label;
      const done = heard[label] + SLACK >= task.listen[label];
      note.textContent = done ? "heard" : `heard ${heard[label].toFixed(1)} of ${task.listen[label].toFixed(1)} s`;
    });
  }

  function player(label, url) {
    const wrap = document.createElement("div");
    wrap.className = "panel-player";
    const name = document.createElement("strong");
    name.textContent = label;
    const audio = document.createElement("audio");
    audio.controls = true;
    audio.preload = "auto";
    audio.src = url;
    audio.dataset.label = label;
    const play = document.createElement("button");
    play.type = "button";
    play.className = "panel-play";
    play.textContent = `Play ${label}`;
    const note = document.createElement("small");
    note.className = "panel-heard";
    note.dataset.label = label;
    let last = null;
    let lastAt = null;
    let unspent = 0;
    // Where the play head rests while paused (read when it stops or is moved there); after
    // the end, the start, where the next play begins again.
    let resting = 0;
    // Where and when this page's Play button asked for playback, read as it asks, until its
    // `play` event takes it (only from a pause, as only then is there one; dropped on a pause
    // or a refused play, so that it never dates a later start).
    let asked = null;
    const rest = (event) => {
      if (audio.paused) resting = audio.currentTime;
      if (event.type === "pause") asked = null;
    };
    // Only the browser's own events of the audio count: one a page's script dispatches (a
    // synthetic `ended` after a pause would count the time paused as heard) is passed over.
    const on = (name, handler) => audio.addEventListener(name, (event) => {
      if (event.isTrusted) handler(event);
    });
    ["loadedmetadata", "pause", "seeked"].forEach((name) => on(name, rest));
    play.addEventListener("click", () => {
      if (audio.paused) {
        asked = {at: performance.now(), from: audio.ended ? 0 : audio.currentTime};
      }
      audio.play().catch(() => { asked = null; });
    });
    // The count starts where and when playback was asked for: the sound starts at once, but a
    // page too busy to run its handlers hears of `play` (or `playing`) after the play head has
    // moved on, and starting at that later position would leave a clip played through short
    // of its length (seen in CI). When: the Play button's own click, else the event's
    // timeStamp (Chromium stamps it when the event is queued, Firefox when it is dispatched).
    // Where: the position the play head rested at, never later than where it is. The clock
    // still bounds what counts, so an early start adds nothing unheard. `playing` only starts
    // a count that a seek cleared.
    const start = (event) => {
      last = Math.min(resting, audio.currentTime, asked ? asked.from : Infinity);
      lastAt = Math.min(event.timeStamp, performance.now(), asked ? asked.at : Infinity);
      asked = null;
      unspent = 0;
    };
    on("play", start);
    on("playing", (event) => { if (last === null) start(event); });
    on("seeking", () => { last = null; unspent = 0; });
    // Each advance of the play head counts as far as the time that really passed while it
    // played: a seek (or a faster rate) moves it further than that, and counts no more; a busy
    // page delays the events, not the sound, so a long step after a long wait counts whole.
    // Time that passed beyond an advance (a coarse clock, a late event) is carried to the
    // next, up to CARRY seconds, so a clip played through counts whole; its end may count up
    // to END_GRACE seconds more than the clock saw, a clock's coarseness at most.
    const count = (now, grace) => {
      const at = performance.now();
      if (last !== null && lastAt !== null) {
        unspent += (at - lastAt) / 1000 + grace;
        const step = Math.min(now - last, unspent);
        if (step > 0) {
          heard[label] += step;
          unspent -= step;
        }
        unspent = Math.min(unspent, CARRY);
      }
      last = now;
      lastAt = at;
      unlockIfHeard();
    };
    on("timeupdate", () => { if (!audio.paused) count(audio.currentTime, 0); });
    on("ended", () => {
      count(audio.duration, END_GRACE);
      last = null;
      resting = 0;
    });
    wrap.append(name, " ", play, " ", audio, " ", note);
    return wrap;
  }

  function passage(shown) {
    const wrap = document.createElement("div");
    wrap.className = "panel-text";
    const name = document.createElement("h3");
    name.textContent = shown.label;
    const text = document.createElement("p");
    text.textContent = shown.text;
    wrap.append(name, text);
    return wrap;
  }

  function show(found) {
    task = found;
    heard = {};
    document.getElementById("panel-instruction").textContent = task.instruction;
    document.getElementById("panel-question").textContent = task.question;
    const notes = document.getElementById("panel-notes");
    notes.hidden = task.notes.length === 0;
    notes.replaceChildren(...task.notes.map((text) => {
      const line = document.createElement("li");
      line.textContent = text;
      return line;
    }));
    texts.replaceChildren(...task.texts.map(passage));
    const labels = Object.keys(task.audio);
    listen.hidden = labels.length === 0;
    audioBox.replaceChildren(...Object.entries(task.audio).map(([label, url]) => {
      heard[label] = 0;
      return player(label, url);
    }));
    options.replaceChildren(...task.choices.map((choice) => {
      const label = document.createElement("label");
      label.className = "panel-option";
      const input = document.createElement("input");
      input.type = "radio";
      input.name = "choice";
      input.value = choice.letter;
      input.addEventListener("change", unlockIfHeard);
      label.append(input, ` ${choice.letter}. ${choice.text}`);
      return label;
    }));
    error.hidden = true;
    status.textContent = labels.length ? "Listen to each audio, then choose." : "Read each text, then choose.";
    box.hidden = false;
    unlockIfHeard();
  }

  async function next() {
    box.hidden = true;
    status.textContent = "Loading a task…";
    const response = await fetch(root.dataset.next, {credentials: "same-origin",
                                                     headers: {Accept: "application/json"}});
    if (response.status === 204) {
      status.textContent = "No task is left for you on this benchmark: thank you.";
      return;
    }
    const body = await response.json();
    if (!response.ok) {
      status.textContent = body.errors.join(" ");
      return;
    }
    show(body);
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = form.querySelector("input[name=choice]:checked");
    const url = root.dataset.answer.replace(/\/0\/$/, `/${task.task}/`);
    const response = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrf(),
                Accept: "application/json"},
      body: JSON.stringify({choice: chosen.value, listened: heard})});
    if (response.status === 201) {
      status.textContent = "Answer saved.";
      next();
      return;
    }
    const body = await response.json();
    error.textContent = body.errors.join(" ");
    error.hidden = false;
  });

  next();
})();
