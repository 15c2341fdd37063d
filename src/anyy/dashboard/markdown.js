// Model output is untrusted: this renders its Markdown as DOM nodes built from text, never through
// innerHTML (docs/dashboard.md, Security).

// -- safe Markdown ----------------------------------------------------------------------------------
// A small subset, built as DOM nodes from text: paragraphs, fenced code blocks, inline code, **bold**,
// *italic*, [links](https://…) with http/https only. No model text ever reaches innerHTML.
const INLINE = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\n]+\*|_[^_\n]+_)|(\[[^\]\n]+\]\([^)\s]+\))/;

function appendInline(parent, text) {
  let rest = text;
  while (rest.length > 0) {
    const match = INLINE.exec(rest);
    if (!match) {
      parent.append(document.createTextNode(rest));
      return;
    }
    if (match.index > 0) parent.append(document.createTextNode(rest.slice(0, match.index)));
    const token = match[0];
    if (match[1]) {
      const code = document.createElement("code");
      code.textContent = token.slice(1, -1);
      parent.append(code);
    } else if (match[2]) {
      const strong = document.createElement("strong");
      appendInline(strong, token.slice(2, -2));
      parent.append(strong);
    } else if (match[3]) {
      const em = document.createElement("em");
      appendInline(em, token.slice(1, -1));
      parent.append(em);
    } else {
      const split = token.indexOf("](");
      const label = token.slice(1, split);
      const href = token.slice(split + 2, -1);
      if (/^https?:\/\//i.test(href)) {
        const a = document.createElement("a");
        a.href = href;
        a.rel = "noopener noreferrer";
        a.target = "_blank";
        a.textContent = label;
        parent.append(a);
      } else {
        parent.append(document.createTextNode(token));
      }
    }
    rest = rest.slice(match.index + token.length);
  }
}

export function renderMarkdown(text) {
  const fragment = document.createDocumentFragment();
  const parts = text.split(/^```[^\n]*\n?/m);
  parts.forEach((part, i) => {
    if (i % 2 === 1) {
      const pre = document.createElement("pre");
      const code = document.createElement("code");
      code.textContent = part.replace(/\n$/, "");
      pre.append(code);
      fragment.append(pre);
      return;
    }
    for (const block of part.split(/\n{2,}/)) {
      if (!block.trim()) continue;
      const p = document.createElement("p");
      block.split("\n").forEach((line, n) => {
        if (n > 0) p.append(document.createElement("br"));
        appendInline(p, line);
      });
      fragment.append(p);
    }
  });
  return fragment;
}
