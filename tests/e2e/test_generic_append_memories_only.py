"""The generic event API keeps a document's and a source file's events on their own streams (the projectors key
by them): sent with another stream, refused with the stream they belong on; sent with none, put there."""

from __future__ import annotations

import hashlib


def test_a_code_file_put_through_the_event_api_goes_on_its_files_stream(client):
    from domain.events import code_file_stream

    content = "def hello():\n    return 1\n"
    data = {"repo": "demo", "path": "hello.py", "content": content, "language": "python",
            "content_hash": hashlib.sha256(content.encode()).hexdigest()}
    wrong = client.post("/v1/events", json={"events": [{"type": "CodeFilePut", "stream_id": "elsewhere",
                                                         "data": data}]})
    assert wrong.status_code == 422 and code_file_stream("demo", "hello.py") in wrong.text, wrong.text
    right = client.post("/v1/events", json={"events": [{"type": "CodeFilePut", "data": data}]})
    assert right.status_code in (200, 201), right.text
    page = client.get("/v1/events", params={"type": "CodeFilePut"}).json()
    assert [e["stream_id"] for e in page["events"]] == [code_file_stream("demo", "hello.py")]
