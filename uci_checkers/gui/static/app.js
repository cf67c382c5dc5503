// uci-checkers gui: the page.  It draws what the server sends and sends what the player does;
// every rule (legal moves, jumps, results) is decided by the server's rules core.
"use strict";

const $ = (id) => document.getElementById(id);
const SIDE = { red: "Red", white: "White" };
const TOTALS_KEY = "uci-checkers.totals";

// ---------------------------------------------------------------- server calls
async function api(path, body) {
  const options = body === undefined ? {} :
    { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  let response;
  try {
    response = await fetch(path, options);
  } catch (err) {
    return { error: "The server cannot be reached: is uci-checkers gui still running?" };
  }
  let data;
  try { data = await response.json(); } catch (err) { data = { error: `The server answered ${response.status}.` }; }
  if (!response.ok && !data.error) data.error = `The server answered ${response.status}.`;
  return data;
}

// ---------------------------------------------------------------- board geometry (drawing only)
function squareRowCol(square) {
  const row = Math.floor((square - 1) / 4);
  return [row, 2 * ((square - 1) % 4) + (row % 2 === 0 ? 1 : 0)];
}

// A board view: 64 cells, dark ones are buttons; keyboard focus moves with the arrow keys.
class BoardView {
  constructor(element, onSquare) {
    this.el = element;
    this.onSquare = onSquare;
    this.cells = new Map();     // square -> button
    this.orientation = null;
    this.focusSquare = null;
    element.addEventListener("keydown", (e) => this.onKey(e));
  }

  build(orientation) {
    if (this.orientation === orientation) return;
    this.orientation = orientation;
    this.el.textContent = "";
    this.cells.clear();
    const where = new Map();
    for (let sq = 1; sq <= 32; sq++) {
      let [r, c] = squareRowCol(sq);
      if (orientation === "red") { r = 7 - r; c = 7 - c; }    // Red's back row (1-4) at the bottom
      where.set(`${r},${c}`, sq);
    }
    for (let r = 0; r < 8; r++) {
      const rowEl = document.createElement("div");
      rowEl.setAttribute("role", "row");
      rowEl.style.display = "contents";
      for (let c = 0; c < 8; c++) {
        const sq = where.get(`${r},${c}`);
        let cell;
        if (sq === undefined) {
          cell = document.createElement("div");
          cell.className = "cell light";
          cell.setAttribute("role", "presentation");
        } else {
          cell = document.createElement("button");
          cell.type = "button";
          cell.className = "cell dark";
          cell.dataset.square = sq;
          cell.dataset.row = r;
          cell.dataset.col = c;
          cell.tabIndex = -1;
          cell.setAttribute("role", "gridcell");
          cell.addEventListener("click", () => { this.focusSquare = sq; this.onSquare(sq); });
          const num = document.createElement("span");
          num.className = "num";
          num.textContent = sq;
          num.setAttribute("aria-hidden", "true");
          cell.appendChild(num);
          this.cells.set(sq, cell);
        }
        rowEl.appendChild(cell);
      }
      this.el.appendChild(rowEl);
    }
  }

  // board: 32 codes; marks: {selectable:Set, targets:Set, selected, last:Set}
  render(board, marks) {
    for (const [sq, cell] of this.cells) {
      const code = board[sq - 1];
      let piece = cell.querySelector(".piece");
      if (code) {
        if (!piece) { piece = document.createElement("span"); cell.appendChild(piece); }
        const red = code === "r" || code === "R";
        const king = code === "R" || code === "W";
        piece.className = `piece ${red ? "red" : "white"}${king ? " king" : ""}`;
        piece.textContent = king ? "♛" : "";
      } else if (piece) {
        piece.remove();
      }
      cell.classList.toggle("movable", marks.selectable.has(sq));
      cell.classList.toggle("target", marks.targets.has(sq));
      cell.classList.toggle("selected", marks.selected === sq);
      cell.classList.toggle("last", marks.last.has(sq));
      let label = `${sq}`;
      if (code) label += `, ${code === "r" || code === "R" ? "Red" : "White"} ${code === "R" || code === "W" ? "king" : "man"}`;
      else label += ", empty";
      if (marks.selected === sq) label += ", selected";
      else if (marks.selectable.has(sq)) label += ", can move";
      if (marks.targets.has(sq)) label += ", marked destination";
      cell.setAttribute("aria-label", label);
    }
    const focus = this.cells.has(this.focusSquare) ? this.focusSquare : (marks.selectable.values().next().value || 1);
    this.setTabStop(focus);
  }

  setTabStop(sq) {
    this.focusSquare = sq;
    for (const [s, cell] of this.cells) cell.tabIndex = s === sq ? 0 : -1;
  }

  onKey(e) {
    const cell = e.target.closest && e.target.closest(".cell.dark");
    if (!cell) return;
    const r = Number(cell.dataset.row), c = Number(cell.dataset.col);
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (moves[e.key]) {
      e.preventDefault();
      const [dr, dc] = moves[e.key];
      let target = null;
      if (dc !== 0) {
        for (let cc = c + 2 * dc; cc >= 0 && cc < 8 && !target; cc += 2 * dc) target = this.find(r, cc);
      } else {
        const nr = r + dr;
        target = this.find(nr, c + 1) || this.find(nr, c - 1);
      }
      if (target) { this.setTabStop(Number(target.dataset.square)); target.focus(); }
    } else if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      this.focusSquare = Number(cell.dataset.square);
      this.onSquare(this.focusSquare);
    }
  }

  find(r, c) {
    for (const cell of this.cells.values()) {
      if (Number(cell.dataset.row) === r && Number(cell.dataset.col) === c) return cell;
    }
    return null;
  }

  focus() {
    const cell = this.cells.get(this.focusSquare) || this.cells.values().next().value;
    if (cell) cell.focus();
  }
}

// ---------------------------------------------------------------- totals in local storage
const totals = {
  memory: { red: 0, white: 0, draws: 0 },
  storageOk: true,
  load() {
    try {
      const probe = "uci-checkers.probe";
      localStorage.setItem(probe, "1");
      localStorage.removeItem(probe);
      const saved = JSON.parse(localStorage.getItem(TOTALS_KEY) || "null");
      if (saved && typeof saved === "object") {
        for (const k of ["red", "white", "draws"]) this.memory[k] = Number(saved[k]) || 0;
      }
    } catch (err) {
      this.storageOk = false;
    }
    this.show();
  },
  add(winner) {
    this.memory[winner === "red" ? "red" : winner === "white" ? "white" : "draws"] += 1;
    if (this.storageOk) {
      try { localStorage.setItem(TOTALS_KEY, JSON.stringify(this.memory)); } catch (err) { this.storageOk = false; }
    }
    this.show();
  },
  show() {
    $("t-red").textContent = this.memory.red;
    $("t-white").textContent = this.memory.white;
    $("t-draws").textContent = this.memory.draws;
    $("storage-warning").hidden = this.storageOk;
  },
};

// ---------------------------------------------------------------- the play view
const play = {
  state: null,
  selected: null,
  events: null,
  counted: new Set(),
  board: null,

  init() {
    this.board = new BoardView($("board"), (sq) => this.onSquare(sq));
    $("board").addEventListener("keydown", (e) => {
      if (e.key === "p" || e.key === "P") { e.preventDefault(); this.pause(); }
      else if (e.key === "Escape") { this.clearSelection(); }
    });
    $("pause").addEventListener("click", () => this.pause());
    $("resume").addEventListener("click", () => this.control("resume"));
    $("resign").addEventListener("click", () => this.control("resign"));
    $("restart").addEventListener("click", () => this.newMatch("replay"));
    $("replay").addEventListener("click", () => this.newMatch("replay"));
    $("new-seed").addEventListener("click", () => this.newMatch("new-seed"));
    $("change-setup").addEventListener("click", () => this.changeSetup());
    $("undo").addEventListener("click", () => this.control("undo"));
    $("restart-engine").addEventListener("click", () => this.control("restart-engine"));
    document.addEventListener("visibilitychange", () => { if (document.hidden) this.autoPause(); });
    window.addEventListener("blur", () => this.autoPause());
  },

  start(state) {
    if (this.events) this.events.close();
    this.state = null;
    this.selected = null;
    this.showError("");
    showView("game");
    this.render(state);
    this.events = new EventSource(`/api/matches/${state.id}/events`);
    this.events.onmessage = (e) => this.render(JSON.parse(e.data));
    this.events.onerror = () => {
      if (this.events && this.events.readyState === EventSource.CLOSED) {
        this.showError("Lost the connection to the server: is uci-checkers gui still running?");
      }
    };
    this.board.focus();
  },

  render(state) {
    if (this.state && state.id === this.state.id && state.version < this.state.version) return;
    if (!this.state || this.state.id !== state.id || this.state.version !== state.version) {
      if (this.selected !== null && !(state.selectable || []).includes(this.selected)) this.selected = null;
    }
    this.state = state;
    $("board").dataset.version = `${state.id}:${state.version}`;     // for scripts and tests that follow the match
    $("board").dataset.partial = String(state.partial.length);
    if (state.partial.length) this.selected = state.partial[state.partial.length - 1];
    else if (state.selectable.length === 1 && state.capture_required) this.selected = state.selectable[0];
    this.board.build(state.orientation);
    const targets = this.selected !== null ? (state.targets[String(this.selected)] || []) : [];
    this.board.render(state.board, {
      selectable: new Set(state.selectable), targets: new Set(targets), selected: this.selected,
      last: new Set(state.last_move),
    });
    $("count-red").textContent = state.counts.red;
    $("count-white").textContent = state.counts.white;
    $("turn-text").textContent = state.turn_text;
    const canAct = state.selectable.length > 0;
    $("hint").textContent = !canAct ? "" : this.selected === null ? "Select a ringed piece, then a marked square."
      : `Selected ${this.selected}. Choose a marked destination.`;
    $("pause-menu").hidden = !state.paused;
    $("pause").disabled = !!state.result || state.paused;
    $("undo").disabled = !state.can_undo;
    $("save-pdn").href = `/api/matches/${state.id}/pdn`;
    $("seed-shown").textContent = state.setup.seed;
    $("engine-error").hidden = !state.engine_error;
    $("engine-error-text").textContent = state.engine_error || "";
    $("move-list").textContent = state.history.length ? state.history.map((m) => m.text).join(" · ") : "No moves yet.";
    $("steps-line").textContent = `Steps played ${state.steps}`;
    const result = state.result;
    $("result").hidden = !result;
    if (result) {
      $("result-title").textContent = result.title;
      $("result-reason").textContent = result.reason;
      $("result-steps").textContent = `Steps played ${state.steps}`;
      if (state.setup.position === "standard" && !this.counted.has(state.id)) {
        this.counted.add(state.id);
        totals.add(result.winner);
      }
    }
  },

  onSquare(sq) {
    const s = this.state;
    if (!s || s.result || s.paused || s.thinking) return;
    const targets = this.selected !== null ? (s.targets[String(this.selected)] || []) : [];
    if (this.selected !== null && targets.includes(sq)) { this.step(this.selected, sq); return; }
    if (s.partial.length) { this.step(this.selected, sq); return; }     // the server explains the refusal
    if (s.selectable.includes(sq)) {
      this.selected = this.selected === sq ? null : sq;
      this.showError("");
      this.render(s);
      return;
    }
    if (this.selected !== null) { this.step(this.selected, sq); return; }
    if (s.selectable.length) this.step(sq, sq);      // refused: the server says why this square cannot move
    else this.showError("");
  },

  // An error replaces the hint line while it is shown (both would tell the player what to select).
  showError(text) {
    $("error").textContent = text;
    $("hint").hidden = !!text;
  },

  clearSelection() {
    if (!this.state || this.state.partial.length) return;    // a jump sequence, once started, is finished
    this.selected = null;
    this.render(this.state);
  },

  async step(from, to) {
    const data = await api(`/api/matches/${this.state.id}/step`, { from, to, version: this.state.version });
    this.afterCall(data);
    if (!data.error && !data.partial.length) this.selected = null;
    if (!data.error) this.render(this.state);
  },

  afterCall(data) {
    this.showError(data.error || "");
    const state = data.error ? data.state : data;
    if (state) this.render(state);
  },

  async control(action) {
    if (!this.state) return;
    const data = await api(`/api/matches/${this.state.id}/${action}`, { version: this.state.version });
    this.afterCall(data);
    if (action === "resume") this.board.focus();
  },

  pause() {
    const s = this.state;
    if (s && !s.result && !s.paused) this.control("pause");
  },

  autoPause() {
    if (!$("game-view").hidden && this.state && !this.state.result && !this.state.paused) this.control("pause");
  },

  async newMatch(action) {
    const data = await api(`/api/matches/${this.state.id}/${action}`, {});
    if (data.error) { this.showError(data.error); return; }
    this.start(data);
  },

  changeSetup() {
    if (this.events) { this.events.close(); this.events = null; }
    showView("setup");
    $("opponent").focus();
  },
};

// ---------------------------------------------------------------- setup form
const setup = {
  init() {
    $("position").addEventListener("change", () => this.update());
    $("seed").addEventListener("input", () => this.update());
    $("setup-form").addEventListener("submit", (e) => { e.preventDefault(); this.submit(); });
    this.update();
  },
  seedOk() {
    const seed = $("seed").value.trim();
    return seed.length >= 1 && seed.length <= 96;
  },
  update() {
    $("setup-text-row").hidden = $("position").value !== "setup";
    $("start").disabled = !this.seedOk();
  },
  async submit() {
    if (!this.seedOk()) return;
    const [mode, level] = $("opponent").value.split(":");
    const body = { mode, level: level || "casual", side: $("side").value, position: $("position").value,
                   seed: $("seed").value, setup_text: $("setup-text").value };
    const slow = setTimeout(() => {      // the very first start compiles the rules core
      $("setup-error").textContent = "Preparing the board (the first start after an install takes a while)…";
    }, 800);
    $("start").disabled = true;
    const data = await api("/api/matches", body);
    clearTimeout(slow);
    this.update();
    if (data.error) { $("setup-error").textContent = data.error; return; }
    $("setup-error").textContent = "";
    play.start(data);
  },
};

// ---------------------------------------------------------------- analysis
const analysis = {
  state: null,
  selected: null,
  events: null,
  stream: null,
  board: null,
  lines: new Map(),     // multipv -> the latest report, all for the board named by linesFor
  linesFor: null,       // the position_id the lines were computed for

  init() {
    this.board = new BoardView($("a-board"), (sq) => this.onSquare(sq));
    $("load-form").addEventListener("submit", (e) => { e.preventDefault(); this.load(); });
    $("a-first").addEventListener("click", () => this.goto(0));
    $("a-back").addEventListener("click", () => this.goto(this.state.cursor - 1));
    $("a-forward").addEventListener("click", () => this.goto(this.state.cursor + 1));
    $("a-last").addEventListener("click", () => this.goto(this.state.history.length));
    $("engine-toggle").addEventListener("click", () => this.toggleEngine());
    $("multipv").addEventListener("change", () => { if (this.stream) { this.stopEngine(); this.startEngine(); } });
    $("a-board").addEventListener("keydown", (e) => {
      if (e.key === "Escape" && this.state && !this.state.partial.length) { this.selected = null; this.render(this.state); }
    });
  },

  async load() {
    const text = $("load-text").value.trim();
    const body = { mode: "analysis", side: $("a-side").value, position: text ? "setup" : "standard",
                   setup_text: text, seed: "analysis" };
    const data = await api("/api/matches", body);
    if (data.error) { $("load-error").textContent = data.error; return; }
    $("load-error").textContent = "";
    this.stopEngine();
    if (this.events) this.events.close();
    this.state = null;
    this.selected = null;
    $("a-error").textContent = "";
    this.setLines(null);                // nothing of the old board's analysis stays on screen
    $("analysis-main").hidden = false;
    this.render(data);
    this.events = new EventSource(`/api/matches/${data.id}/events`);
    this.events.onmessage = (e) => this.render(JSON.parse(e.data));
  },

  render(state) {
    if (this.state && state.id === this.state.id && state.version < this.state.version) return;
    this.state = state;
    if (state.partial.length) this.selected = state.partial[state.partial.length - 1];
    if (this.selected !== null && !state.selectable.includes(this.selected)) this.selected = null;
    this.board.build(state.orientation);
    $("a-board").dataset.position = state.position_id;
    const targets = this.selected !== null ? (state.targets[String(this.selected)] || []) : [];
    this.board.render(state.board, { selectable: new Set(state.selectable), targets: new Set(targets),
                                     selected: this.selected, last: new Set(state.last_move) });
    this.showLines();                   // the lines of another board are hidden
    $("a-turn-text").textContent = state.result ? `${state.result.title}: ${state.result.reason}` : state.turn_text;
    $("a-save-pdn").href = `/api/matches/${state.id}/pdn`;
    $("a-engine-name").textContent = engineName;
    $("eval-bar").classList.toggle("red-top", state.orientation === "white");
    const list = $("a-moves");
    list.textContent = "";
    state.history.forEach((m, i) => {
      const li = document.createElement("li");
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = `${i + 1}. ${m.text}`;
      if (i + 1 === state.cursor) b.setAttribute("aria-current", "true");
      b.addEventListener("click", () => this.goto(i + 1));
      li.appendChild(b);
      list.appendChild(li);
    });
  },

  onSquare(sq) {
    const s = this.state;
    if (!s) return;
    const targets = this.selected !== null ? (s.targets[String(this.selected)] || []) : [];
    if (this.selected !== null && (targets.includes(sq) || s.partial.length)) { this.step(this.selected, sq); return; }
    if (s.selectable.includes(sq)) { this.selected = this.selected === sq ? null : sq; this.render(s); }
  },

  async step(from, to) {
    const data = await api(`/api/matches/${this.state.id}/step`, { from, to, version: this.state.version });
    $("a-error").textContent = data.error || "";
    const state = data.error ? data.state : data;
    if (!data.error && !data.partial.length) this.selected = null;
    if (state) this.render(state);
  },

  async goto(ply) {
    if (!this.state || ply < 0 || ply > this.state.history.length) return;
    this.selected = null;
    const data = await api(`/api/matches/${this.state.id}/goto`, { ply });
    $("a-error").textContent = data.error || "";
    const state = data.error ? data.state : data;
    if (state) this.render(state);
  },

  toggleEngine() { if (this.stream) this.stopEngine(); else this.startEngine(); },

  startEngine() {
    if (!this.state) return;
    this.setLines(null);
    const stream = new EventSource(`/api/matches/${this.state.id}/analysis?multipv=${$("multipv").value}`);
    this.stream = stream;
    // every report names the board it was computed for: a report for another board starts a new set of
    // lines (the stream only moves forward) and is shown only while that board is on screen
    stream.addEventListener("position", (e) => {
      if (this.stream === stream) this.setLines(JSON.parse(e.data).position_id);
    });
    stream.addEventListener("info", (e) => {
      const info = JSON.parse(e.data);
      if (this.stream !== stream) return;
      if (info.position_id !== this.linesFor) this.setLines(info.position_id);
      this.lines.set(info.multipv, info);
      this.showLines();
    });
    stream.addEventListener("done", (e) => {
      const info = JSON.parse(e.data);
      if (this.stream === stream && info.error && this.state && info.position_id === this.state.position_id) {
        $("a-error").textContent = info.error;
      }
    });
    $("engine-toggle").textContent = "Stop engine";
    $("engine-toggle").setAttribute("aria-pressed", "true");
  },

  stopEngine() {
    if (this.stream) { this.stream.close(); this.stream = null; }
    $("engine-toggle").textContent = "Start engine";
    $("engine-toggle").setAttribute("aria-pressed", "false");
  },

  setLines(positionId) {
    this.lines.clear();
    this.linesFor = positionId;
    this.showLines();
  },

  showLines() {
    const ol = $("lines");
    ol.textContent = "";
    const current = this.state !== null && this.linesFor === this.state.position_id;
    const shown = current ? this.lines : new Map();
    ol.dataset.position = current ? this.linesFor : "";
    const keys = [...shown.keys()].sort((a, b) => a - b);
    for (const k of keys) {
      const info = shown.get(k);
      const li = document.createElement("li");
      li.textContent = `${info.score} (depth ${info.depth}) ${info.pv.join(" ")}`;
      ol.appendChild(li);
    }
    const best = shown.get(1);
    $("a-depth").textContent = best ? `Depth ${best.depth} · ${best.nodes ?? 0} nodes · scores from Red's side` : "";
    const cp = best ? best.red_cp : 0;
    const share = Math.round(100 / (1 + Math.exp(-cp / 250)));
    $("eval-fill").style.height = `${share}%`;
    $("eval-text").textContent = best ? best.score : "0.00";
    $("eval-bar").setAttribute("aria-valuenow", String(share));
    $("eval-bar").setAttribute("aria-valuetext", best ? `${best.score} for Red` : "no evaluation yet");
  },
};

// ---------------------------------------------------------------- views
let engineName = "";

function showView(name) {
  $("setup-view").hidden = name !== "setup";
  $("game-view").hidden = name !== "game";
  $("analysis-view").hidden = name !== "analysis";
  $("nav-play").setAttribute("aria-pressed", String(name !== "analysis"));
  $("nav-analyse").setAttribute("aria-pressed", String(name === "analysis"));
  if (name !== "analysis") analysis.stopEngine();
}

document.addEventListener("DOMContentLoaded", async () => {
  totals.load();
  setup.init();
  play.init();
  analysis.init();
  $("nav-play").addEventListener("click", () => showView(play.state ? "game" : "setup"));
  $("nav-analyse").addEventListener("click", () => { play.autoPause(); showView("analysis"); });
  document.body.dataset.ready = "true";
  const info = await api("/api/info");
  engineName = info.engine || "";
  $("engine-name").textContent = engineName;
});
