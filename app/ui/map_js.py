"""The Map tab's page script: it wires plotly's click and lasso events on the plot to two hidden
textboxes (the ids, as text), which the tab's events read (:mod:`app.ui.map_tab`)."""

from __future__ import annotations

BIND_JS = """
() => {
  // Plotly draws the figure after Gradio updates it and may replace the element, so a watcher
  // binds whichever plot is current (once per element).
  if (window.__studioMapWatcher) return [];
  const put = (id, value) => {
    const el = document.querySelector('#' + id + ' textarea, #' + id + ' input');
    if (!el) return;
    el.value = value;
    el.dispatchEvent(new Event('input', {bubbles: true}));
  };
  window.__studioMapWatcher = setInterval(() => {
    const gd = document.querySelector('#map-plot .js-plotly-plot');
    if (!gd || !gd.on || gd.__studioBound) return;
    gd.__studioBound = true;
    gd.on('plotly_click', (e) => {
      if (!e || !e.points || !e.points.length) return;
      put('map-clicked', String(e.points[0].customdata));
      // a programmatic value does not fire Gradio's own events: press the hidden button
      setTimeout(() => document.querySelector('#map-explain-btn')?.click(), 50);
    });
    gd.on('plotly_selected', (e) => {
      const ids = e && e.points ? e.points.map((p) => p.customdata) : [];
      put('map-selected', [...new Set(ids)].join(','));
    });
  }, 300);
  return [];
}
"""
