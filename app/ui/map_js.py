"""The Map tab's page script: it wires plotly's click and lasso events on the plot to two hidden
textboxes (the ids, as text), which the tab's events read (:mod:`app.ui.map_tab`); on a map that
draws a sample of its rows, a lasso also sends its region, and the server selects every row inside
it (:mod:`app.services.design.map_region`). It keeps a
third one holding the figure's size on the page: the names are placed for it
(:mod:`app.plots.labels`). When the figure on screen was placed for another size (the page's
first map, a window resized), it presses Refresh once for the size it has now; a zoom presses a
hidden button that draws the names again for the ranges zoomed to."""

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
      if (!e || !e.points || !e.points.length || e.points[0].customdata === undefined) return;
      put('map-clicked', String(e.points[0].customdata));
      // a programmatic value does not fire Gradio's own events: press the hidden button
      setTimeout(() => document.querySelector('#map-explain-btn')?.click(), 50);
    });
    gd.on('plotly_selected', (e) => {
      const ids = e && e.points ? e.points.map((p) => p.customdata) : [];
      put('map-selected', [...new Set(ids.filter((i) => i !== undefined))].join(','));
      // a map that draws a sample of its rows: the server selects every row inside the region
      const meta = gd.layout.meta || {};
      if (!e || gd.layout.xaxis2 || !meta.view || !meta.others) return;
      let region = null;
      if (e.lassoPoints) region = {x: e.lassoPoints.x, y: e.lassoPoints.y};
      else if (e.range) region = {box: [e.range.x, e.range.y]};
      if (!region) return;
      put('map-region', JSON.stringify({view: meta.view, ...region}));
      setTimeout(() => document.querySelector('#map-region-btn')?.click(), 50);
    });
    // a zoom on the single map: its names placed again for the ranges on screen (a crowded
    // centre names what fits there); a double click back to the whole map does the same
    let zoomed = null;
    gd.on('plotly_relayout', (e) => {
      if (!e || gd.layout.xaxis2) return;
      const x0 = e['xaxis.range[0]'], x1 = e['xaxis.range[1]'];
      const y0 = e['yaxis.range[0]'], y1 = e['yaxis.range[1]'];
      let box = null;
      if (x0 !== undefined && y0 !== undefined) box = [x0, x1, y0, y1].join(',');
      else if (e['xaxis.autorange'] || e['yaxis.autorange']) box = '';
      if (box === null) return;
      clearTimeout(zoomed);
      zoomed = setTimeout(() => {
        put('map-zoom', box);
        setTimeout(() => document.querySelector('#map-zoom-btn')?.click(), 100);
      }, 250);
    });
  }, 300);
  // The figure's size, as the names must be placed for it; a map placed for another size is
  // drawn again, once per size (a map that cannot be, a projection still running, is not asked
  // again and again).
  let asked = '';
  setInterval(() => {
    const host = document.querySelector('#map-plot [data-testid="plotly"]');
    if (!host || host.offsetParent === null) return;  // the Map tab is not showing
    const w = Math.round(host.clientWidth), h = Math.round(host.clientHeight);
    if (w < 200 || h < 200) return;
    const size = w + 'x' + h;
    const box = document.querySelector('#map-size textarea, #map-size input');
    if (box && box.value !== size) put('map-size', size);
    const gd = document.querySelector('#map-plot .js-plotly-plot');
    const placed = gd && gd.layout && gd.layout.meta && gd.layout.meta.placed_for;
    if (!gd || placed === undefined || placed === size || asked === size) return;
    const [pw, ph] = (placed || '0x0').split('x').map(Number);
    if (Math.abs(pw - w) < 24 && Math.abs(ph - h) < 24) return;
    asked = size;
    setTimeout(() => document.querySelector('#map-refresh')?.click(), 150);
  }, 500);
  return [];
}
"""
