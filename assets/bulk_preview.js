() => {
  // A bulk label applies the preview the page shows (app/ui/bulk_preview.py). When a filter or
  // a selection changes, the preview on screen no longer says what Label would do: at once,
  // before the server has counted the new one, its token is taken away (a click sends none and
  // is refused) and the button says it is counting; the new preview, when it arrives, gives
  // the button back.
  if (window.__studioCounting) return [];
  const watched = new Set();
  const done = (button) => button?.classList.remove('counting');
  window.__studioCounting = (previewId, buttonId) => {
    const preview = document.getElementById(previewId);
    const button = document.getElementById(buttonId);
    if (!preview || !button) return;
    preview.querySelectorAll('[data-token]').forEach((n) => n.removeAttribute('data-token'));
    preview.classList.add('counting');
    button.classList.add('counting');
    if (watched.has(previewId)) return;
    watched.add(previewId);
    new MutationObserver((changes) => {
      if (!changes.some((c) => c.addedNodes.length)) return;  // our own token removal
      preview.classList.remove('counting');
      done(document.getElementById(buttonId));
    }).observe(preview, {childList: true, subtree: true});
  };
  return [];
}
