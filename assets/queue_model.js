() => {
  // The Label tab's model line (app/ui/queue_model.py). When the model that serves changes
  // (data-model: "project:version:artifact"), the card's suggestions are asked for again through
  // the queue's one-answer-at-a-time path (assets/queue_keys.js: a key pressed meanwhile waits
  // for them), and a Map already drawn is drawn again (its Refresh). The line's link opens the
  // Train tab, where the retrain's progress shows.
  if (window.__studioQueueModel) return [];
  window.__studioQueueModel = true;
  let last = null;  // the model the line named last
  const project = (model) => model.split(':')[0];
  const follow = () => {
    const model = document.querySelector('#queue-model [data-model]')?.getAttribute('data-model');
    if (!model) return;
    const before = last;
    last = model;
    if (before === null || before === model || project(before) !== project(model)) return;
    if (window.__studioQueueAct) window.__studioQueueAct('__RESCORE__');
    if (document.querySelector('#map-plot .js-plotly-plot')) {
      document.getElementById('map-refresh')?.click();
    }
  };
  const watch = () => {
    const line = document.querySelector('#queue-model');
    if (!line) return setTimeout(watch, 200);
    new MutationObserver(follow).observe(line, {
      subtree: true, childList: true, attributes: true, attributeFilter: ['data-model'],
    });
    follow();
  };
  watch();
  document.addEventListener('click', (e) => {
    const link = e.target.closest?.('#queue-model [data-tab]');
    if (!link) return;
    e.preventDefault();
    const name = link.getAttribute('data-tab');
    const tabs = () => [...document.querySelectorAll('[role=tab]')];
    tabs().find((tab) => tab.textContent.trim() === name)?.click();
    // a link to a control there (the automatic retrain's switch): its section opened, the
    // control shown in the middle of the screen and pointed at for a moment
    const focus = link.getAttribute('data-focus');
    if (!focus) return;
    const point = (tries) => {
      const section = tabs().find((tab) => tab.textContent.trim() === 'Retrain');
      if (section && section.getAttribute('aria-selected') !== 'true') section.click();
      const el = document.getElementById(focus);
      if (el && el.offsetParent !== null) {
        el.scrollIntoView({block: 'center'});
        el.querySelector('input')?.focus({preventScroll: true});
        el.classList.add('studio-pointed');
        setTimeout(() => el.classList.remove('studio-pointed'), 2500);
      } else if (tries > 0) {
        setTimeout(() => point(tries - 1), 100);
      }
    };
    setTimeout(() => point(50), 50);
  });
  return [];
}
