(() => {
  // An idle page draws no frames (app/ui/main.py, head). A loop of animation frames (each frame
  // asking for the next) that has run for LONG_MS gets one frame every EVERY_MS from then on.
  // Gradio's page (6.31) starts such a loop at load, for its loading indicator's timer, and
  // removes the indicator without ending it: 60 frames a second for as long as the page is
  // open, in a tab nobody touches (~5 % of a core in the page's process and more in the
  // compositor, on a 2-core laptop). The timers of events that run long (a status line's
  // tenths of seconds) are loops too, and still move four times a second; short animations (a
  // transition, a plot's zoom) are untouched.
  if (window.__studioFrames) return;
  window.__studioFrames = true;
  const LONG_MS = 5000;
  const EVERY_MS = 250;
  const requestFrame = window.requestAnimationFrame.bind(window);
  const cancelFrame = window.cancelAnimationFrame.bind(window);
  const pending = new Map();  // id given out -> {frame} or {timer}, until its callback runs
  let next = 0;
  let running = null;  // the loop of the frame whose callback runs now
  window.requestAnimationFrame = (callback) => {
    const loop = running ?? { since: performance.now() };
    const id = ++next;
    const run = (time) => {
      pending.delete(id);
      running = loop;
      try {
        callback(time);
      } finally {
        running = null;
      }
    };
    if (performance.now() - loop.since < LONG_MS) {
      pending.set(id, { frame: requestFrame(run) });
    } else {
      pending.set(id, { timer: setTimeout(() => pending.set(id, { frame: requestFrame(run) }), EVERY_MS) });
    }
    return id;
  };
  window.cancelAnimationFrame = (id) => {
    const asked = pending.get(id);
    if (!asked) return;
    pending.delete(id);
    if (asked.frame !== undefined) cancelFrame(asked.frame);
    else clearTimeout(asked.timer);
  };
})();
