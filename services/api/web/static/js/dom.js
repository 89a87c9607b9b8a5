// A tiny element builder: h("a", { href: "#/" }, "text", child). Text is always set as
// text nodes, never as HTML, so values from the API cannot inject markup.

export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "class") {
      el.className = value;
    } else if (key === "value" || key === "checked" || key === "selected") {
      el[key] = value; // properties, so the current state (not only the default) is set
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// A labelled form control, with a slot for its error message wired to aria-describedby.
export function field(label, control, { hint = "", name = control.name } = {}) {
  const id = control.id || `f-${name}`;
  control.id = id;
  const errorId = `${id}-error`;
  const hintId = hint ? `${id}-hint` : "";
  control.setAttribute("aria-describedby", [hintId, errorId].filter(Boolean).join(" "));
  return h(
    "div",
    { class: "field", "data-field": name },
    h("label", { for: id }, label),
    control,
    hint ? h("p", { class: "hint", id: hintId }, hint) : null,
    h("p", { class: "field-error", id: errorId, hidden: true }),
  );
}
