from conftest import wait_until


def test_write_project_recall_over_http(http, worker):
    written = http.post("/v1/memories", json={"content": "Alice moved to Lisbon in May", "agent_id": "a1",
                                              "metadata": {"dia_id": "D1:3"}})
    assert written.status_code == 201, written.text
    position = written.json()["position"]
    # Read-your-writes waits for memories and keyword; wait for the vector too, to see both legs.
    assert wait_until(lambda: all(p["lag_events"] == 0 for p in http.get("/v1/projections").json()["projections"]),
                      timeout=60)
    answer = http.post("/v1/recall", json={"query": "where does Alice live?", "agent_id": "a1",
                                           "min_position": position, "k": 5})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert results[0]["memory_id"] == written.json()["memory_id"]
    assert results[0]["metadata"] == {"dia_id": "D1:3"}
    assert set(results[0]["explanation"]["legs"]) == {"keyword", "vector"}
    assert wait_until(lambda: http.get("/healthz").status_code == 200, timeout=20)
