"""The web view and large values by reference: a real uvicorn server over an on-disk store of real SDK
spans; the session page shows the preview and links to the blob, served whole as text/plain with
nosniff through the view's guards (the token), refused when no session refers to it, when it is not a
hash, and when its bytes no longer hash to its name."""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import quote

import requests

from otel_prov.settings import UiSettings
from otel_prov.stores import parse_store
from tests.support.blobs import payload, run
from tests.support.webdata import serve


def test_the_session_page_links_to_the_whole_value_served_as_plain_text(tmp_path: Path) -> None:
    text, inner = payload()
    text = "<script>alert(1)</script>" + text[25:]
    store = tmp_path / "store"
    [session] = run(f"oxigraph:{store}", [text])
    digest = hashlib.sha256(text.encode()).hexdigest()
    running = serve(UiSettings(store=parse_store(str(store)), port=0, token="s3cret-token"))
    try:
        auth = {"Authorization": "Bearer s3cret-token"}
        page = requests.get(f"{running.url}/sessions/{quote(session, safe=':/')}", headers=auth, timeout=30)
        assert page.status_code == 200
        assert f'href="/blobs/sha256/{digest}"' in page.text
        assert inner not in page.text and "<script>alert" not in page.text
        blob = requests.get(f"{running.url}/blobs/sha256/{digest}", headers=auth, timeout=30)
        assert blob.status_code == 200
        assert blob.headers["content-type"] == "text/plain; charset=utf-8"
        assert blob.headers["x-content-type-options"] == "nosniff"
        assert blob.text == text
        assert requests.get(f"{running.url}/blobs/sha256/{digest}", timeout=30).status_code == 401
        unknown = hashlib.sha256(b"never stored").hexdigest()
        never = requests.get(f"{running.url}/blobs/sha256/{unknown}", headers=auth, timeout=30)
        assert never.status_code == 404 and "no session refers" in never.text
        assert requests.get(f"{running.url}/blobs/sha256/..%2f..%2fCURRENT", headers=auth,
                            timeout=30).status_code == 404
        path = store / "blobs" / "sha256" / digest[:2] / digest
        path.write_bytes(b"altered")
        changed = requests.get(f"{running.url}/blobs/sha256/{digest}", headers=auth, timeout=30)
        assert changed.status_code == 410 and "changed" in changed.text and "altered" not in changed.text
    finally:
        running.stop()
