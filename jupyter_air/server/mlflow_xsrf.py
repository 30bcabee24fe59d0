"""Jupyter's XSRF protection for the MLflow UI served at ``<base_url>air/mlflow/``.

The proxy makes every state-changing request (POST, PUT, PATCH, DELETE) pass Jupyter's own check:
Jupyter's token, or the ``_xsrf`` cookie echoed in an ``X-XSRFToken`` header, which a page of
another site cannot read. JupyterLab's own requests send that header; the MLflow UI, served from
the same origin, sends the cookie but not the header. So each MLflow page the proxy serves gets a
small script, first in its ``<head>``, that adds the header to the page's same-origin
state-changing ``fetch`` and ``XMLHttpRequest`` calls. Artifacts (user content, served in a
sandbox) never get it.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable
from typing import Any

# plain ES5: it runs before MLflow's own scripts, in whatever browser shows the tab
SCRIPT = """<script data-jupyter-air="xsrf">(function () {
  var unsafe = /^(POST|PUT|PATCH|DELETE)$/i;
  function token() {
    var found = document.cookie.match(/(?:^|;\\s*)_xsrf=([^;]*)/);
    return found ? decodeURIComponent(found[1]) : null;
  }
  function sameOrigin(url) {
    try { return new URL(url, location.href).origin === location.origin; }
    catch (e) { return false; }
  }
  var fetch = window.fetch;
  if (fetch) {
    window.fetch = function (input, init) {
      var request = typeof Request !== "undefined" && input instanceof Request ? input : null;
      var method = (init && init.method) || (request ? request.method : "GET");
      var value = token();
      if (value && unsafe.test(method) && sameOrigin(request ? request.url : String(input))) {
        var headers = new Headers((init && init.headers) || (request ? request.headers : {}));
        if (!headers.has("X-XSRFToken")) { headers.set("X-XSRFToken", value); }
        init = Object.assign({}, init, { headers: headers });
      }
      return fetch.call(this, input, init);
    };
  }
  var open = XMLHttpRequest.prototype.open;
  var send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.open = function (method, url) {
    this.__jupyterAirXsrf = unsafe.test(method) && sameOrigin(url);
    return open.apply(this, arguments);
  };
  XMLHttpRequest.prototype.send = function () {
    var value = this.__jupyterAirXsrf ? token() : null;
    if (value) { this.setRequestHeader("X-XSRFToken", value); }
    return send.apply(this, arguments);
  };
})();</script>"""

_HEAD = re.compile(rb"<head(?:\s[^>]*)?>", re.IGNORECASE)


def page_rewriter(extra: str = "") -> Callable[[Any, str], None]:
    """A ``rewrite_response`` of the proxy that puts ``SCRIPT``, then ``extra`` (more tags of
    ours), first in the ``<head>`` of an MLflow HTML page (decompressing it if MLflow compressed
    it); artifacts and anything not HTML are left as they are."""
    tags = (SCRIPT + extra).encode()

    def add_page_scripts(response: Any, path: str) -> None:
        if "artifact" in path or not response.body:
            return
        if "text/html" not in response.headers.get("Content-Type", ""):
            return
        body = _decoded(response.body, response.headers.get("Content-Encoding", ""))
        if body is None:
            return
        head = _HEAD.search(body)
        if head is None:
            return
        response.body = body[: head.end()] + tags + body[head.end() :]
        # the page is not MLflow's file any more: no validators of that file, and no caching (a
        # cached page would outlive a change of the script)
        for name in ("Content-Encoding", "ETag", "Last-Modified"):
            if name in response.headers:
                del response.headers[name]
        response.headers["Cache-Control"] = "no-store"

    return add_page_scripts


add_xsrf_script = page_rewriter()


def _decoded(body: bytes, encoding: str) -> bytes | None:
    encoding = encoding.strip().lower()
    try:
        if encoding in ("", "identity"):
            return body
        if encoding == "gzip":
            return gzip.decompress(body)
        if encoding == "deflate":
            return zlib.decompress(body)
    except (OSError, zlib.error):
        return None
    return None  # an encoding we cannot read: leave the page as it is
