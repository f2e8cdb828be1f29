() => {
  // The labelling queue's keys: each presses a visible button of the Label tab
  // (app/ui/queue_tab.py fills in KEYS).
  if (window.__studioQueueKeys) return [];
  window.__studioQueueKeys = true;
  const KEYS = __KEYS__;
  const card = () => document.querySelector('#queue-card [data-item]');
  const filter = () => document.querySelector('#queue-filter textarea, #queue-filter input');
  document.addEventListener('keydown', (e) => {
    const c = card();
    if (!c || c.offsetParent === null) return;  // the Label tab is not showing
    const f = filter();
    if (e.target === f) {
      if (e.key === 'Escape') {
        f.value = '';
        f.dispatchEvent(new Event('input', {bubbles: true}));
        f.blur();
        e.preventDefault();
      }
      return;  // Enter in the filter is the textbox's own submit
    }
    const tag = (e.target.tagName || '').toLowerCase();
    if (tag === 'input' || tag === 'textarea' || tag === 'select' || e.target.isContentEditable) return;
    if (window.__studioQueueBusy && Date.now() - window.__studioQueueBusy < 3000) {
      e.preventDefault();  // the answer before this one is still on its way
      return;
    }
    let id = KEYS[e.key];
    if ((e.ctrlKey || e.metaKey) && e.key === 'z') id = 'queue-undo';
    else if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (id) {
      e.preventDefault();
      const button = document.querySelector('#' + id);
      if (!button || button.disabled) return;
      window.__studioQueueBusy = Date.now();
      button.click();
      return;
    }
    if (f && (e.key === '/' || /^[a-z_]$/i.test(e.key))) {
      f.focus();
      if (e.key === '/') e.preventDefault();  // other letters go on into the filter
    }
  });
  // A new card on screen means the answer arrived: keys work again.
  new MutationObserver(() => { window.__studioQueueBusy = 0; })
    .observe(document.body, {subtree: true, attributes: true, attributeFilter: ['data-item']});
  return [];
}
