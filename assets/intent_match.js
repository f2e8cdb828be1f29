(() => {
  // The Label tab's filter matches intent names in the page, the moment a key is typed: the
  // rule of core/labelling/fuzzy.py (match_intents, best_match) written again for the browser,
  // so the list answers for the text as typed without a round trip to the server. Enter still
  // sends the text typed, and the server matches it again: what it stores is decided there.
  // tests/e2e/banking77/test_label_keys.py checks that this copy ranks and picks exactly as the
  // Python one over every prefix of BANKING77's names and more.
  //
  // Python counts code points and its `\s`, `\w`, strip() and lower() are Unicode's: so do
  // these (arrays of code points, the same whitespace, letters and numbers).
  const SPACE = '\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
  const SEP = `[${SPACE}_\\-./:]`;
  const SEPS = new RegExp(SEP + '+', 'gu');  // fuzzy.py's _SEPARATORS
  const IS_SEP = new RegExp('^' + SEP + '$', 'u');
  const IS_WORD = /^[\p{L}\p{N}_]$/u;  // Python's \w: alphanumeric (str.isalnum) or _
  const EDGE = new RegExp(`^[${SPACE}]+|[${SPACE}]+$`, 'gu');
  const strip = (s) => s.replace(EDGE, '');
  const points = (s) => Array.from(s);
  const byPoints = (a, b) => {  // Python's str order: by code point, not UTF-16 unit
    const x = points(a), y = points(b);
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      const d = x[i].codePointAt(0) - y[i].codePointAt(0);
      if (d) return d;
    }
    return x.length - y.length;
  };

  // clean_query: the text without the `/` that opens the filter, and outer spaces
  const clean = (query) => strip(strip(query).replace(/^\/+/u, ''));

  // _score: lower is better; null when the query does not match the name
  const score = (query, name) => {
    const low = name.toLowerCase();
    const n = points(name).length;
    const compact = points(query.toLowerCase().replace(SEPS, ''));
    const spaced = strip(query.toLowerCase()).replace(SEPS, '_');
    if (!compact.length) return [0, 0, n];
    if (low.replace(SEPS, '_') === spaced) return [-1, 0, n];  // the whole name
    if (low.startsWith(spaced)) return [0, 0, n];
    const words = low.split(SEPS).filter((w) => w);
    const parts = spaced.split(SEPS).filter((t) => t);
    if (parts.every((t) => words.some((w) => w.startsWith(t)))) return [1, 0, n];
    const at = low.indexOf(spaced);
    if (at >= 0) return [2, points(low.slice(0, at)).length, n];
    const chars = points(low);
    const starts = new Set();
    chars.forEach((c, i) => {
      if (IS_WORD.test(c) && (i === 0 || IS_SEP.test(chars[i - 1]))) starts.add(i);
    });
    let pos = -1, gaps = 0, hits = 0;
    for (const ch of compact) {
      const next = chars.indexOf(ch, pos + 1);
      if (next < 0) return null;
      gaps += pos < 0 ? 0 : next - pos - 1;
      hits += starts.has(next) ? 1 : 0;
      pos = next;
    }
    return [3, gaps - 2 * hits, n];
  };

  // _ranked: [score, name] of the names that match, best first (ties by name, as Python sorts)
  const ranked = (query, names) => {
    const text = clean(query);
    const found = [];
    for (const name of names) {
      const s = score(text, name);
      if (s) found.push([s, name]);
    }
    return found.sort(([a, x], [b, y]) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2] || byPoints(x, y));
  };

  // match_intents: the names that match, best first
  const rank = (query, names, limit = 8) => ranked(query, names).slice(0, limit).map(([, n]) => n);

  // best_match: {name} the one name the text names, or {why} it names none (nothing, a tie)
  const best = (query, names) => {
    const text = clean(query);
    if (!text) return {why: "Type part of an intent's name first."};
    const found = ranked(text, names);
    if (!found.length) return {why: `No intent matches “${text}”.`};
    const [top] = found[0];
    const tied = found.filter(([s]) => s[0] === top[0] && s[1] === top[1]);
    if (tied.length > 1) return {why: 'tie', tied: tied.map(([, n]) => n)};
    return {name: tied[0][1]};
  };

  return {clean, rank, best};
})()
