"""The console's event hub: numbered, ordered, bounded, and honest about what it dropped."""

from __future__ import annotations

import threading

import pytest

from harness.console._live import EventHub


def test_ids_increase_by_one_and_after_returns_what_came_later_in_order() -> None:
    hub = EventHub()
    ids = [hub.publish("run", {"n": n}) for n in range(5)]
    assert ids == [1, 2, 3, 4, 5]
    batch = hub.after(2)
    assert [(e.id, e.topic, e.data["n"]) for e in batch.events] == [
        (3, "run", 2),
        (4, "run", 3),
        (5, "run", 4),
    ]
    assert not batch.gap and batch.last_id == 5
    assert hub.after(5).events == () and not hub.after(5).gap


def test_memory_is_bounded_and_a_reader_older_than_what_is_kept_is_told_to_rerender() -> None:
    hub = EventHub(keep=3)
    for n in range(10):
        hub.publish("audit", {"n": n})
    kept = hub.after(0)
    assert [e.id for e in kept.events] == [8, 9, 10]
    assert kept.gap  # events 1..7 were dropped: the page must render again in full
    assert hub.after(6).gap
    exactly = hub.after(7)  # everything after 7 is still kept: nothing was missed
    assert [e.id for e in exactly.events] == [8, 9, 10] and not exactly.gap


def test_an_id_from_an_earlier_console_process_is_a_gap_not_silence() -> None:
    hub = EventHub()
    hub.publish("run", {})
    batch = hub.after(500)  # the browser's Last-Event-ID from before a restart
    assert batch.gap and [e.id for e in batch.events] == [1]
    assert hub.after(-1).gap
    waited = hub.wait_after(500, timeout=60)  # returns at once: never blocks on a stale id
    assert waited.gap


def test_wait_after_wakes_when_another_thread_publishes() -> None:
    hub = EventHub()
    got: list[int] = []
    ready = threading.Event()

    def reader() -> None:
        ready.set()
        got.extend(e.id for e in hub.wait_after(0, timeout=60).events)

    thread = threading.Thread(target=reader)
    thread.start()
    ready.wait(60)
    hub.publish("approvals", {"id": "apr-1"})
    thread.join(60)
    assert not thread.is_alive() and got == [1]


def test_close_wakes_every_waiter_with_nothing_new() -> None:
    hub = EventHub()
    results: list[int] = []
    started = threading.Barrier(3)

    def reader() -> None:
        started.wait(60)
        results.append(len(hub.wait_after(0, timeout=600).events))

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    started.wait(60)
    hub.close()
    for thread in threads:
        thread.join(60)
    assert not any(t.is_alive() for t in threads) and results == [0, 0]


def test_concurrent_publishers_get_distinct_consecutive_ids() -> None:
    hub = EventHub(keep=10_000)
    ids: list[int] = []
    lock = threading.Lock()

    def publish() -> None:
        mine = [hub.publish("run", {}) for _ in range(200)]
        with lock:
            ids.extend(mine)

    threads = [threading.Thread(target=publish) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(ids) == list(range(1, 801))
    assert [e.id for e in hub.after(0).events] == list(range(1, 801))


def test_keep_must_be_positive() -> None:
    with pytest.raises(ValueError):
        EventHub(keep=0)
