() => {
  // A bulk label applies the preview the page shows (app/ui/bulk_preview.py). While the preview
  // on screen is not what Label would do, the page says so at once: its token is held back (a
  // click sends none and is refused) and the button says it is counting, until the new
  // preview arrives, which gives the button back.
  //
  // Two things make a preview out of date: a widget it was counted for (a filter, the intent,
  // the choice, the selection) shows another value now, read from the page itself right after
  // the key or click that changed it (no wait for the server's events: ~100 ms on a loaded
  // machine), or a change about to be counted (an option pressed, a search applied by Enter),
  // and a recount the server was asked for (window.__studioCounting, from the change events).
  // A widget put back as it was (a search typed in a picker, then Esc) gives the preview back.
  if (window.__studioCounting) return [];
  const views = {};  // preview id -> {button, roots, seen: the widgets' values it shows, pending}
  const byId = (id) => document.getElementById(id);
  const valuesOf = (view) => JSON.stringify(view.roots.map((selector) => [
    ...document.querySelectorAll(`${selector} input, ${selector} textarea`),
  ].map((el) => (el.type === 'checkbox' || el.type === 'radio' ? el.checked : el.value))));

  const hold = (previewId, buttonId) => {
    const preview = byId(previewId);
    const button = byId(buttonId);
    if (!preview || !button) return;
    preview.querySelectorAll('[data-token]').forEach((n) => {
      n.setAttribute('data-held', n.getAttribute('data-token'));
      n.removeAttribute('data-token');
    });
    preview.classList.add('counting');
    button.classList.add('counting');
  };
  const release = (previewId, buttonId) => {
    const preview = byId(previewId);
    preview?.querySelectorAll('[data-held]').forEach((n) => {
      n.setAttribute('data-token', n.getAttribute('data-held'));
      n.removeAttribute('data-held');
    });
    preview?.classList.remove('counting');
    byId(buttonId)?.classList.remove('counting');
  };
  const sync = () => {
    for (const [previewId, view] of Object.entries(views)) {
      if (view.seen === null) continue;  // no preview counted yet: nothing to hold
      if (valuesOf(view) !== view.seen) hold(previewId, view.button);
      else if (!view.pending) release(previewId, view.button);
    }
  };
  // A change the server is about to count (a new option pressed, a search applied): held now.
  const expect = (previewId, view) => {
    if (view.seen === null) return;
    view.pending = true;
    hold(previewId, view.button);
    setTimeout(() => {  // had nothing changed after all, what the preview shows holds again
      if (valuesOf(view) === view.seen) view.pending = false;
      sync();
    }, 3000);
  };
  const soon = () => {
    setTimeout(sync, 0);  // after the widget has drawn its new value
    requestAnimationFrame(sync);
  };
  for (const type of ['pointerdown', 'pointerup', 'click', 'keydown', 'keyup', 'input', 'change', 'focusout']) {
    document.addEventListener(type, soon, true);
  }
  // A press on another option of a watched picker: held from the press (the picker shows the
  // new value only once the button is released), until that option's preview arrives. Should
  // the picker not take it, the hold ends once its value is back to what the preview shows.
  document.addEventListener('pointerdown', (e) => {
    const option = e.target.closest?.('[role=option]');
    const list = option?.closest('ul[id], [role=listbox][id]');
    const picker = list && document.querySelector(`[aria-controls="${list.id}"]`);
    if (!picker) return;
    const text = option.textContent.replace(/^\s*✓\s*/u, '').trim();
    for (const [previewId, view] of Object.entries(views)) {
      if (text !== picker.value && view.roots.some((selector) => picker.closest(selector))) {
        expect(previewId, view);
      }
    }
  }, true);
  // Enter in a box whose text applies on Enter (a search): a recount follows, held till then.
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || e.isComposing) return;
    for (const [previewId, view] of Object.entries(views)) {
      if (view.submits.some((selector) => e.target.closest?.(selector))) expect(previewId, view);
    }
  }, true);

  const observe = (previewId) => {
    const preview = byId(previewId);
    if (!preview) return false;
    let shown = null;  // the data-seq of the preview on screen: every render has its own
    new MutationObserver(() => {
      // a new preview, not our own token moves nor Gradio's loading marks around the old one
      const seq = preview.querySelector('[data-seq]')?.getAttribute('data-seq') ?? null;
      if (seq === shown) return;
      shown = seq;
      const view = views[previewId];
      release(previewId, view?.button);
      if (!view) return;
      view.pending = false;
      view.seen = valuesOf(view);  // what this preview shows the counts of
    }).observe(preview, {childList: true, subtree: true});
    return true;
  };
  // A preview whose widgets the page watches: ``roots``, CSS selectors of the widgets it is
  // counted for, each value as shown; ``submits``, boxes whose text counts once Enter applies
  // it (a text typed but not applied is the server's to refuse, and to count again).
  window.__studioWatchPreview = (previewId, buttonId, roots, submits = []) => {
    if (views[previewId]) return;
    views[previewId] = {button: buttonId, roots, submits, seen: null, pending: false};
    const start = () => observe(previewId) || setTimeout(start, 300);
    start();
  };
  // The server was asked for a new preview (a change event): held until it arrives.
  window.__studioCounting = (previewId, buttonId) => {
    if (views[previewId]) views[previewId].pending = true;
    hold(previewId, buttonId);
  };
  return [];
}
