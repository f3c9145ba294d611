/* Search on demand (research-digest): Material's bundle asks for the search index, which grows
 * with every edition, as soon as a page opens. Loaded before the bundle (`digest site` lists it
 * first in extra.polyfills), this holds back that one request until the reader focuses, presses
 * or types into search, or opens it from the header's button: over http(s) the XMLHttpRequest
 * for search/search_index.json, from file:// the offline plugin's search/search_index.js
 * <script> that the bundle appends to <head>. Then it goes out as it was; Material says
 * "Initializing search" until its worker has the index. Nothing else is touched. A page opened
 * from a search result (?h=, highlighting) or a search link (?q=) holds nothing back.
 *
 * The sitemap is never fetched: Material reads every <link rel=alternate> as a translation of
 * the site and fetches the sitemap.xml beside it to switch languages; ours is the Atom feed,
 * and the sitemap (which grows with every edition too) would be a first visit's largest file.
 */
(() => {
  "use strict";
  const params = new URLSearchParams(location.search);
  if (params.has("h") || params.has("q")) return;

  const held = [];
  const stop = new AbortController();
  let wanted = false;
  const want = () => {
    if (wanted) return;
    wanted = true;
    stop.abort();  // removes the listeners below
    for (const run of held.splice(0)) run();
  };
  const isIndex = (url, suffix) => {
    try {
      return new URL(String(url), location.href).pathname.endsWith(suffix);
    } catch {
      return false;
    }
  };

  // http(s): hold back send() of a request opened for the index.
  const xhr = XMLHttpRequest.prototype;
  const open = xhr.open, send = xhr.send, forIndex = new WeakSet(), forSitemap = new WeakSet();
  xhr.open = function (method, url) {
    if (isIndex(url, "/search/search_index.json")) forIndex.add(this);
    else forIndex.delete(this);
    if (isIndex(url, "/sitemap.xml")) forSitemap.add(this);
    else forSitemap.delete(this);
    return open.apply(this, arguments);
  };
  xhr.send = function (...args) {
    if (forSitemap.has(this)) return;  // for language switching, which the digest has none of
    if (wanted || !forIndex.has(this)) return send.apply(this, args);
    held.push(() => send.apply(this, args));
  };

  // file://: hold back the index's <script> (appendChild returns the node as it always does).
  const head = document.head, append = head.appendChild;
  head.appendChild = function (node) {
    if (!wanted && node instanceof HTMLScriptElement &&
        isIndex(node.src, "/search/search_index.js")) {
      held.push(() => append.call(head, node));
      return node;
    }
    return append.apply(this, arguments);
  };

  // Intent: the search field gets focus (a click, Tab, Material's / s f shortcuts), a press on it
  // or on a search button (label for the #__search toggle), or the toggle itself changing.
  const field = "[data-md-component=search-query]";
  const listen = (type, wants) => addEventListener(type, (event) => {
    if (event.target instanceof Element && wants(event.target)) want();
  }, { capture: true, signal: stop.signal });
  listen("focusin", (target) => target.matches(field));
  listen("pointerdown", (target) => target.closest(`${field}, label[for="__search"]`) !== null);
  listen("change", (target) => target.id === "__search");
})();
