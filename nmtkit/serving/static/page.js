// The translation page of `nmtkit serve`: it reads GET /model once, sends the text box to
// POST /translate (with alignment and attention), and draws each sentence's translation,
// score, n-best list and attention heatmap. A corrected translation is sent back with the
// corrected text as its forced prefix. Every string from the user or the server reaches the
// page as text (textContent, value), never as markup.
"use strict";

const COMPLETE_AFTER_MS = 600; // a pause in typing in a translation asks for a completion
const ATTENDED = 0.25; // hovering a word also lights the words it gave this much attention

const $ = (id) => document.getElementById(id);
let defaults = { beam: null, maxBeam: null };

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = !message;
}

async function describeModel() {
  try {
    const response = await fetch("model");
    const info = await response.json();
    const options = info.search.options || {};
    defaults = { beam: options.beam_size ?? null, maxBeam: info.limits.max_beam };
    if (defaults.beam !== null) $("beam").value = defaults.beam;
    $("beam").max = defaults.maxBeam;
    $("nbest").max = defaults.maxBeam;
    const search = info.search.signature;
    $("model").textContent = `${info.src_lang} → ${info.tgt_lang} · ${search}`;
  } catch (error) {
    $("model").textContent = `the model's description did not load (${error})`;
  }
}

// The search options of the form, as POST /translate takes them.
function settings() {
  const body = { alignment: true, attention: true };
  if ($("greedy").checked) {
    body.greedy = true;
  } else if ($("beam").value !== "") {
    body.beam_size = Number($("beam").value);
  }
  const nbest = Number($("nbest").value || "1");
  if (!$("greedy").checked && nbest > 1) body.nbest = nbest;
  if ($("length-penalty").value !== "") body.length_penalty = Number($("length-penalty").value);
  return body;
}

// POST /translate; the answer's translations, or an Error whose message is the server's.
async function translate(body) {
  let response;
  try {
    response = await fetch("translate", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
  } catch (error) {
    throw new Error(`the server did not answer (${error.message})`);
  }
  let answer = null;
  try {
    answer = await response.json();
  } catch (error) {
    answer = null;
  }
  if (!response.ok) {
    const reason = answer && answer.error ? answer.error : response.statusText;
    throw new Error(`${response.status}: ${reason}`);
  }
  return answer.translations;
}

async function translateAll(event) {
  if (event) event.preventDefault();
  const lines = $("source").value.split("\n").map((line) => line.trim()).filter(Boolean);
  showError("");
  if (!lines.length) {
    showError("Type a sentence to translate.");
    return;
  }
  const body = { text: lines, ...settings() };
  $("translate").disabled = true;
  $("status").textContent = "translating…";
  const started = performance.now();
  try {
    const found = await translate(body);
    const results = $("results");
    results.replaceChildren();
    found.forEach((item, index) => results.append(sentenceView(lines[index], item, body)));
    const seconds = ((performance.now() - started) / 1000).toFixed(2);
    $("status").textContent = `${lines.length} sentence(s) in ${seconds} s`;
  } catch (error) {
    showError(error.message);
    $("status").textContent = "";
  } finally {
    $("translate").disabled = false;
  }
}

// One sentence: its source, an editable translation with its score and a copy button, the
// n-best list, and the heatmap of the candidate shown.
function sentenceView(source, item, body) {
  const view = element("article", "sentence");
  view.append(element("p", "source", source));
  const row = element("div", "output");
  const output = element("input", "translation");
  output.type = "text";
  output.spellcheck = false;
  output.setAttribute("aria-label", "translation (edit to complete)");
  const score = element("span", "score muted");
  const copy = element("button", "copy", "Copy");
  copy.type = "button";
  row.append(output, copy, score);
  const nbest = element("ol", "nbest");
  const map = element("div", "heatmap-box");
  view.append(row, nbest, map);

  const show = (candidate) => {
    output.value = candidate.text;
    score.textContent = `score ${candidate.score.toFixed(3)}`;
    map.replaceChildren(heatmap(candidate));
  };
  const list = (found) => {
    nbest.replaceChildren();
    (found.nbest || []).forEach((candidate, rank) => {
      const entry = element("li", rank === 0 ? "chosen" : "");
      const pick = element("button", "pick", candidate.text);
      pick.type = "button";
      pick.title = `score ${candidate.score.toFixed(3)}: show this hypothesis`;
      pick.addEventListener("click", () => {
        nbest.querySelectorAll("li").forEach((li) => li.classList.remove("chosen"));
        entry.classList.add("chosen");
        show(candidate);
      });
      entry.append(pick, element("span", "score muted", candidate.score.toFixed(3)));
      nbest.append(entry);
    });
  };
  show(item);
  list(item);

  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(output.value);
    } catch (error) {
      output.select();
      document.execCommand("copy");
    }
    copy.textContent = "Copied";
    setTimeout(() => (copy.textContent = "Copy"), 1200);
  });

  // Interactive completion: the text up to the end of the word at the cursor is kept as a
  // forced prefix, and the rest translated again.
  let timer = null;
  let asked = 0;
  const complete = async () => {
    clearTimeout(timer);
    const caret = output.selectionStart ?? output.value.length;
    const rest = output.value.slice(caret).match(/^\S*/)[0];
    const prefix = output.value.slice(0, caret) + rest;
    const request = ++asked;
    view.classList.add("busy");
    try {
      const [found] = await translate({ ...body, text: source, prefix: prefix });
      if (request !== asked) return; // the user typed on: a newer request is coming
      showError("");
      show(found);
      list(found);
      const at = Math.min(prefix.length, output.value.length);
      output.setSelectionRange(at, at);
    } catch (error) {
      if (request === asked) showError(error.message);
    } finally {
      if (request === asked) view.classList.remove("busy");
    }
  };
  output.addEventListener("input", () => {
    clearTimeout(timer);
    asked++; // an answer to an older text is stale
    timer = setTimeout(complete, COMPLETE_AFTER_MS);
  });
  output.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      complete();
    }
  });
  return view;
}

// The attention matrix as a table: one column per source word, one row per target word, a
// cell's shade its weight, the hard links outlined.
function heatmap(candidate) {
  const attention = candidate.attention;
  if (!attention) {
    return element("p", "muted", "This model's attention is not an alignment: no heatmap.");
  }
  const links = new Set((candidate.alignment || "").split(" ").filter(Boolean));
  const table = element("table", "heatmap");
  table.setAttribute("aria-label", "attention: target words (rows) by source words (columns)");
  const head = element("tr");
  head.append(element("th", "corner"));
  attention.source.forEach((word, i) => {
    const cell = element("th", "src", word);
    cell.dataset.i = i;
    cell.scope = "col";
    head.append(cell);
  });
  table.append(element("thead"));
  table.tHead.append(head);
  const body = element("tbody");
  attention.weights.forEach((weights, j) => {
    const row = element("tr");
    const label = element("th", "tgt", attention.target[j]);
    label.dataset.j = j;
    label.scope = "row";
    row.append(label);
    weights.forEach((weight, i) => {
      const cell = element("td", links.has(`${i}-${j}`) ? "cell link" : "cell");
      cell.dataset.i = i;
      cell.dataset.j = j;
      cell.style.backgroundColor = `rgba(29, 78, 216, ${weight})`;
      cell.title = `${attention.target[j]} → ${attention.source[i]}: ${weight.toFixed(2)}`;
      row.append(cell);
    });
    body.append(row);
  });
  table.append(body);

  // What a word is aligned to: its links, and the words it shares this much attention with.
  const aligned = (i, j) => links.has(`${i}-${j}`) || attention.weights[j][i] >= ATTENDED;
  const light = (selector, on) =>
    table.querySelectorAll(selector).forEach((node) => node.classList.toggle("lit", on));
  const hover = (node, on) => {
    const { i, j } = node.dataset;
    if (j !== undefined && i === undefined) {
      light(`th.tgt[data-j="${j}"]`, on);
      attention.source.forEach((_, k) => aligned(k, Number(j)) && light(`th.src[data-i="${k}"]`, on));
    } else if (i !== undefined && j === undefined) {
      light(`th.src[data-i="${i}"]`, on);
      attention.target.forEach((_, k) => aligned(Number(i), k) && light(`th.tgt[data-j="${k}"]`, on));
    } else {
      light(`th.src[data-i="${i}"], th.tgt[data-j="${j}"]`, on);
    }
  };
  table.querySelectorAll("th.src, th.tgt, td.cell").forEach((node) => {
    node.addEventListener("mouseenter", () => hover(node, true));
    node.addEventListener("mouseleave", () => hover(node, false));
  });
  return table;
}

document.addEventListener("DOMContentLoaded", () => {
  describeModel();
  $("form").addEventListener("submit", translateAll);
  $("source").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) translateAll(event);
  });
  $("greedy").addEventListener("change", () => {
    $("beam").disabled = $("nbest").disabled = $("greedy").checked;
  });
});
