() => {
  // The labelling queue's keys: each presses a visible button of the Label tab
  // (app/ui/queue_tab.py fills in KEYS, by key name: "Enter", "Shift+Enter", "Ctrl+z", " ", "0").
  // No letter is ever a command: a letter (any character that is not a key of KEYS) starts
  // typing an intent's name in the filter, so typing a name, with or without the `/` that opens
  // the filter, stores nothing but the label it names. One answer is on its way at a time: a
  // key pressed meanwhile waits, in order, for the answer before it (it would otherwise run on
  // the card that answer replaces). After every answer the focus is back on the card.
  if (window.__studioQueueKeys) return [];
  window.__studioQueueKeys = true;
  const KEYS = __KEYS__;
  const COMMIT = 'queue-commit';  // the hidden button that takes the typed intent
  // Someone works here: a key (typing an intent's name too) presses this hidden button at most
  // every ALIVE_MS, the last key of a burst included, and the automatic retrains wait for a
  // quiet spell after it (app/ui/queue_activity.py)
  const ALIVE = 'queue-alive';
  const ALIVE_MS = 2000;
  const WAIT_MS = 5000;  // an answer that never comes stops holding keys back after this
  const root = () => document.querySelector('#queue-card');
  const card = () => document.querySelector('#queue-card [data-item]');
  const seq = () => card()?.getAttribute('data-seq');
  const filter = () => document.querySelector('#queue-filter textarea, #queue-filter input');
  let busy = 0;  // when the answer on its way was asked for (0: none)
  let busySeq = null;  // the card on screen then: the answer is there when it changes
  const waiting = [];  // [button id, typed text] pressed meanwhile, oldest first

  const ANSWERS = new Set([...Object.values(KEYS), COMMIT]);  // buttons that answer the card
  let pressing = false;  // the click below is press()'s own

  const press = ([id, typed]) => {
    const button = document.getElementById(id);
    if (!button || button.disabled) return;
    busy = Date.now();
    busySeq = seq();
    window.__studioQueueTyped = typed ?? '';  // read by the commit's js (queue_tab.py)
    pressing = true;
    try {
      button.click();
    } finally {
      pressing = false;
    }
  };
  const act = (id, typed) => {
    if (busy && Date.now() - busy < WAIT_MS) {
      waiting.push([id, typed]);
      return;
    }
    waiting.length = 0;  // kept for an answer that never came: too old to apply now
    press([id, typed]);
  };
  // the model line's refresh of the card's suggestions goes the same way (assets/queue_model.js)
  window.__studioQueueAct = act;
  // answers asked for and not on screen yet (one on its way, keys waiting behind it): a key's
  // answer is the card drawn once none is left, not a refresh drawn before it
  window.__studioQueuePending = () => (busy && Date.now() - busy < WAIT_MS ? 1 : 0) + waiting.length;
  const toCard = () => {
    const r = root();
    if (!r) return;
    r.tabIndex = -1;
    r.focus({preventScroll: true});
  };
  const clear = (f) => {
    if (!f || !f.value) return;
    f.value = '';
    f.dispatchEvent(new Event('input', {bubbles: true}));
  };
  // Enter in the filter (or a click on a listed match): the text as it is at this moment goes
  // to the server, which re-matches it; the box empties and the card takes the keys again.
  const commit = (typed) => {
    clear(filter());
    toCard();
    if (typed.replace(/[\s/]/g, '')) act(COMMIT, typed);  // an empty filter never labels
  };

  // The name of a key as KEYS spells it: a character as typed (lower case with Ctrl or Cmd),
  // other keys by name; Ctrl (or Cmd), and Shift on a key that is no character, come first.
  const keyName = (e) => {
    const char = e.key.length === 1;
    const ctrl = e.ctrlKey || e.metaKey ? 'Ctrl+' : '';
    const shift = e.shiftKey && (!char || ctrl) ? 'Shift+' : '';
    return ctrl + shift + (char && ctrl ? e.key.toLowerCase() : e.key);
  };

  let aliveAt = 0, aliveLater = null;
  const alive = () => {
    const wait = aliveAt + ALIVE_MS - Date.now();
    if (wait > 0) {
      aliveLater ??= setTimeout(() => { aliveLater = null; alive(); }, wait);
      return;
    }
    aliveAt = Date.now();
    document.getElementById(ALIVE)?.click();
  };

  document.addEventListener('keydown', (e) => {
    const c = card();
    if (!c || c.offsetParent === null) return;  // the Label tab is not showing
    alive();
    const f = filter();
    if (f && e.target === f) {
      if (e.key === 'Enter' && !e.isComposing) {
        e.preventDefault();
        e.stopPropagation();
        if (!e.shiftKey) commit(f.value);
      } else if (e.key === 'Escape') {
        e.preventDefault();
        clear(f);
        toCard();
      } else if (e.key === '/' && !f.value) {
        e.preventDefault();
      }
      return;
    }
    const tag = (e.target.tagName || '').toLowerCase();
    if (tag === 'input' || tag === 'textarea' || tag === 'select' || e.target.isContentEditable) return;
    if (e.altKey || e.isComposing) return;
    const id = KEYS[keyName(e)];
    if (id) {
      e.preventDefault();
      act(id);
      return;
    }
    // Any other character types an intent's name: the filter takes it (and the keys after it)
    if (f && e.key.length === 1 && !e.ctrlKey && !e.metaKey) {
      if (document.activeElement !== f) {
        f.focus();
        f.select();  // a new filter replaces what an earlier one left
      }
      if (e.key === '/') e.preventDefault();  // `/` only opens it; other characters go on in
    }
  }, true);  // capture: before the focused element (a button, the filter) acts on the key

  // An answer's button clicked with the mouse: one answer at a time as with the keys, but a
  // click while an answer is on its way (a double click) is dropped, never kept for the card
  // that answer brings. (The server runs every click it gets: see queue_tab.py.)
  document.addEventListener('click', (e) => {
    if (pressing) return;
    const button = e.target.closest?.('button');
    if (!button || !ANSWERS.has(button.id)) return;
    if (busy && Date.now() - busy < WAIT_MS) {
      e.preventDefault();
      e.stopImmediatePropagation();
      return;
    }
    busy = Date.now();
    busySeq = seq();
  }, true);

  document.addEventListener('click', (e) => {
    const match = e.target.closest?.('#queue-matches [data-intent]');
    if (!match) return;
    e.preventDefault();
    commit(match.getAttribute('data-intent'));
  });

  // A new card on screen (every answer renders a new data-seq, a refusal too) means the answer
  // arrived: the focus goes back to the card unless a filter is being typed, and the next key
  // waiting is pressed.
  const settled = () => {
    if (card()?.offsetParent === null) return;  // another tab: leave its focus alone
    const f = filter();
    const a = document.activeElement;
    const typing = f && a === f && f.value;
    const inQueue = a && a.closest?.('#queue-card, #queue-filter') || a?.tagName === 'BUTTON';
    if (!typing && (!a || a === document.body || inQueue)) toCard();
    if (!busy || seq() === busySeq) return;
    busy = 0;
    const next = waiting.shift();
    if (next) press(next);
  };
  const watch = () => {
    const r = root();
    if (!r) return setTimeout(watch, 200);
    new MutationObserver(settled).observe(r, {
      subtree: true, childList: true, characterData: true,
      attributes: true, attributeFilter: ['data-item', 'data-seq'],
    });
  };
  watch();

  // The intents the filter's text matches, matched here at each key (assets/intent_match.js,
  // the server's rule) among the project's intents, which every card carries (data-intents):
  // the list is always for the text in the box, led by what Enter does with exactly that text.
  // (Enter sends the text typed; the server matches it again and decides.)
  const MATCH = __MATCH__;
  let namesFrom = null, names = [];
  const intents = () => {
    const raw = card()?.getAttribute('data-intents') ?? null;
    if (raw !== namesFrom) {
      namesFrom = raw;
      try { names = JSON.parse(raw || '[]'); } catch (_) { names = []; }
    }
    return names;
  };
  const matchList = () => {
    const host = document.querySelector('#queue-matches');
    if (!host) return null;
    let list = host.querySelector('.queue-matches');
    if (!list) {
      list = document.createElement('div');
      list.className = 'queue-matches';
      (host.querySelector('.prose') || host).appendChild(list);
    }
    return list;
  };
  const showMatches = () => {
    const list = matchList();
    const f = filter();
    if (!list || !f) return;
    const typed = f.value;
    list.setAttribute('data-query', typed);
    list.replaceChildren();
    if (!MATCH.clean(typed)) return;
    const all = intents();
    const found = MATCH.rank(typed, all);
    const verdict = MATCH.best(typed, all);
    const lead = document.createElement('span');
    lead.className = 'queue-lead';
    lead.textContent = verdict.name ? 'Enter takes'
      : found.length ? 'A tie: Enter stores nothing. Type more of one:'
      : `${verdict.why} Enter stores nothing.`;
    list.appendChild(lead);
    for (const name of found) {
      const chip = document.createElement('button');
      chip.type = 'button';
      chip.className = 'queue-match' + (name === verdict.name ? ' best' : '');
      chip.setAttribute('data-intent', name);
      chip.textContent = name;
      list.appendChild(chip);
    }
  };
  document.addEventListener('input', (e) => {
    if (e.target === filter()) showMatches();
  }, true);
  // a new card may bring other intents (one created meanwhile): the list follows
  const watchNames = () => {
    const r = root();
    if (!r) return setTimeout(watchNames, 200);
    new MutationObserver(() => {
      if (card()?.getAttribute('data-intents') !== namesFrom && filter()?.value) showMatches();
    }).observe(r, {subtree: true, childList: true, attributes: true});
  };
  watchNames();
  return [];
}
