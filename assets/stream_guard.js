() => {
  // Every event the server accepted gets its answer (app/ui/stream_guard.py).
  // Gradio's page receives the answers of all its events on one stream (/queue/data), which the
  // server closes when the last event it knows of has ended. An event sent just then can be
  // stranded: its join is answered while the closing message is still on its way, so the page
  // thinks the stream is open and does not open another, and the event's answer waits on the
  // server for good (a key that never lands, a card that never changes). This watches the
  // joins and the streams; when an accepted event has no open stream to come back on, it
  // presses a hidden button whose (empty) event makes the page open one, and the waiting
  // answers arrive on it.
  if (window.__studioStreamGuard) return [];
  window.__studioStreamGuard = true;
  const NUDGE = 'stream-nudge';
  const GRACE_MS = 150;  // a stream that closed this recently may still be followed by a new one
  const TRIES = 4;  // nudges for one event before it is given up (the server no longer knows it)
  const waiting = new Map();  // event id -> nudges made for it
  const ended = new Set();  // ids whose end was read before their join's answer was
  let open = 0;  // streams being read now
  let closedAt = 0;
  const realFetch = window.fetch.bind(window);
  const path = (input) => {
    try {
      return new URL(typeof input === 'string' ? input : input.url ?? String(input), location.href).pathname;
    } catch (e) {
      return '';
    }
  };
  const read = async (body) => {  // the stream's messages: which events have ended
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += value;
        let end;
        while ((end = text.indexOf('\n\n')) >= 0) {
          for (const line of text.slice(0, end).split('\n')) {
            if (!line.startsWith('data:')) continue;
            try {
              const message = JSON.parse(line.slice(5));
              if (message.msg === 'process_completed' && message.event_id) {
                if (!waiting.delete(message.event_id)) {
                  if (ended.size > 1000) ended.clear();
                  ended.add(message.event_id);
                }
              }
            } catch (e) { /* not JSON: a heartbeat or a comment */ }
          }
          text = text.slice(end + 2);
        }
      }
    } catch (e) {
      /* aborted or broken: Gradio says so itself */
    } finally {
      open -= 1;
      closedAt = Date.now();
    }
  };
  window.fetch = async (input, init) => {
    const where = path(input);
    if (where.endsWith('/queue/data')) {  // a stream counts as open from its request on
      open += 1;
      let response;
      try {
        response = await realFetch(input, init);
      } catch (e) {
        open -= 1;
        closedAt = Date.now();
        throw e;
      }
      if (!response.ok || !response.body) {
        open -= 1;
        closedAt = Date.now();
        return response;
      }
      const [mine, theirs] = response.body.tee();
      read(mine);
      return new Response(theirs, { status: response.status, statusText: response.statusText, headers: response.headers });
    }
    const response = await realFetch(input, init);
    if (response.ok && where.endsWith('/queue/join')) {
      response.clone().json().then((answer) => {
        if (!answer || !answer.event_id) return;
        if (!ended.delete(answer.event_id)) waiting.set(answer.event_id, 0);
      }, () => {});
    }
    return response;
  };
  setInterval(() => {
    if (open > 0 || waiting.size === 0 || Date.now() - closedAt < GRACE_MS) return;
    for (const [id, tries] of waiting) {
      if (tries >= TRIES) waiting.delete(id);
      else waiting.set(id, tries + 1);
    }
    if (waiting.size) document.getElementById(NUDGE)?.click();
  }, 250);
  return [];
}
