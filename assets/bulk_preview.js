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
  //
  // Each recount the page asks for is numbered (its "ask", sent with the recount: data-ask on
  // the preview it brings): a preview counted for an earlier ask, come late, is not what the
  // screen shows and gives nothing back (issue 75 item 5: a filter's change is counted twice,
  // and on a busy server the first count came after the second was asked for, gave the button
  // back with the old preview's token, and Label was refused "What the screen shows changed").
  if (window.__studioCounting) return [];
  const SAFETY_MS = 30000;  // a recount that never comes stops holding the button after this
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
  // the ask the preview on screen was counted for (none said: the one asked last)
  const shownAsk = (previewId, view) => {
    const said = byId(previewId)?.querySelector('[data-ask]')?.getAttribute('data-ask');
    return said === undefined || said === null ? view.ask : Number(said);
  };
  const sync = () => {
    for (const [previewId, view] of Object.entries(views)) {
      if (view.seen === null) continue;  // no preview counted yet: nothing to hold
      if (valuesOf(view) !== view.seen || shownAsk(previewId, view) < view.ask) {
        hold(previewId, view.button);
      } else if (!view.pending) release(previewId, view.button);
    }
  };
  // A recount asked for: numbered, and held until a preview counted for it comes (or, should
  // none ever come, SAFETY_MS later: the server then refuses what the screen no longer shows).
  const ask = (previewId, view) => {
    view.ask += 1;
    view.asked = true;
    clearTimeout(view.safety);
    view.safety = setTimeout(() => {
      view.asked = false;
      view.pending = false;
      view.ask = shownAsk(previewId, {ask: view.ask});
      sync();
    }, SAFETY_MS);
  };
  // A change the server is about to count (a new option pressed, a search applied): held now;
  // ``sure``: a recount follows whatever the value (Enter applies a search).
  const expect = (previewId, view, sure = false) => {
    if (view.seen === null) return;
    view.pending = true;
    if (sure) ask(previewId, view);
    hold(previewId, view.button);
    setTimeout(() => {  // had nothing changed after all, what the preview shows holds again;
      // never while a recount the server was asked for has not come (a search applied by
      // Enter changes no watched widget: on a busy server its preview came after these 3 s,
      // and a click sent the old preview's token, refused: issue 75 item 5)
      if (valuesOf(view) === view.seen && !view.asked) view.pending = false;
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
      if (view.submits.some((selector) => e.target.closest?.(selector))) {
        expect(previewId, view, true);
      }
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
      if (view && shownAsk(previewId, view) < view.ask) {  // counted for an earlier ask
        hold(previewId, view.button);
        return;
      }
      release(previewId, view?.button);
      if (!view) return;
      view.pending = false;
      view.asked = false;
      clearTimeout(view.safety);
      view.seen = valuesOf(view);  // what this preview shows the counts of
    }).observe(preview, {childList: true, subtree: true});
    return true;
  };
  // A preview whose widgets the page watches: ``roots``, CSS selectors of the widgets it is
  // counted for, each value as shown; ``submits``, boxes whose text counts once Enter applies
  // it (a text typed but not applied is the server's to refuse, and to count again).
  window.__studioWatchPreview = (previewId, buttonId, roots, submits = []) => {
    if (views[previewId]) return;
    views[previewId] = {
      button: buttonId, roots, submits, seen: null, pending: false, asked: false, ask: 0,
      safety: null,
    };
    const start = () => observe(previewId) || setTimeout(start, 300);
    start();
  };
  // The server was asked for a new preview (a change event): held until it arrives, however
  // long that takes.
  window.__studioCounting = (previewId, buttonId) => {
    const view = views[previewId];
    if (view) {
      view.pending = true;
      ask(previewId, view);
    }
    hold(previewId, buttonId);
  };
  // The number of the last recount asked for: a recount's ``js`` sends it (bulk_preview.ask_js).
  window.__studioAsk = (previewId) => views[previewId]?.ask ?? 0;
  return [];
}
