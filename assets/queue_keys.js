() => {
  // The labelling queue's keys: each presses a visible button of the Label tab
  // (app/ui/queue_tab.py fills in KEYS).
  if (window.__studioQueueKeys) return [];
  window.__studioQueueKeys = true;
  const KEYS = __KEYS__;
  const card = () => document.querySelector('#queue-card [data-item]');
  const filter = () => document.querySelector('#queue-filter textarea, #queue-filter input');
  const press = (id) => {
    const button = document.querySelector('#' + id);
    if (!button || button.disabled) return;
    window.__studioQueueBusy = Date.now();
    button.click();
  };
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
    let id = KEYS[e.key];
    if ((e.ctrlKey || e.metaKey) && e.key === 'z') id = 'queue-undo';
    else if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (id) {
      e.preventDefault();
      if (window.__studioQueueBusy && Date.now() - window.__studioQueueBusy < 5000) {
        // The answer before this one is still on its way: this key applies to the next
        // utterance, once it is on screen (one key is kept; a fast typist loses nothing).
        window.__studioQueuePending = id;
        return;
      }
      press(id);
      return;
    }
    if (f && (e.key === '/' || /^[a-z_]$/i.test(e.key))) {
      f.focus();
      if (e.key === '/') e.preventDefault();  // other letters go on into the filter
    }
  });
  // A new card on screen (replaced or updated in place) means the answer arrived: keys work
  // again, and a key pressed meanwhile is applied now.
  const settled = () => {
    if (!window.__studioQueueBusy) return;
    window.__studioQueueBusy = 0;
    const pending = window.__studioQueuePending;
    window.__studioQueuePending = null;
    if (pending) press(pending);
  };
  const watch = () => {
    const root = document.querySelector('#queue-card');
    if (!root) return setTimeout(watch, 200);
    new MutationObserver(settled).observe(root, {
      subtree: true, childList: true, characterData: true,
      attributes: true, attributeFilter: ['data-item', 'data-seq'],
    });
  };
  watch();
  return [];
}
