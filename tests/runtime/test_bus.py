"""G2: the runtime's event bus hands each event to the subscribers of its session (and to those of every
session), and says truly whether anyone listens, so that events nobody reads are not built."""

from __future__ import annotations

from anyy.api.events import ExecutionStateChanged, Notice
from anyy.runtime.bus import EventBus


def _state(session_id: str) -> ExecutionStateChanged:
    return ExecutionStateChanged(session_id=session_id, execution_id="x", state="running")


def test_g2_events_reach_the_subscribers_of_their_session_only() -> None:
    bus = EventBus()
    mine, other, everyone = bus.subscribe("a"), bus.subscribe("b"), bus.subscribe()
    states = bus.subscribe("a", states_only=True)
    others = [bus.subscribe(f"s{n}") for n in range(50)]
    notice = Notice(session_id="a", level="info", text="hello")
    bus.publish(notice)
    bus.publish(_state("a"))
    assert [mine.queue.get_nowait(), mine.queue.get_nowait()] == [notice, _state("a")]
    assert [everyone.queue.get_nowait(), everyone.queue.get_nowait()] == [notice, _state("a")]
    assert states.queue.get_nowait() == _state("a")  # the state change only
    assert states.queue.empty()
    assert other.queue.empty()
    assert all(sub.queue.empty() for sub in others)


def test_g2_a_closed_subscription_stops_listening() -> None:
    bus = EventBus()
    assert not bus.listened("a")
    first, second = bus.subscribe("a"), bus.subscribe("a")
    watcher = bus.subscribe("b", states_only=True)
    assert bus.listened("a")
    assert not bus.listened("b")  # a state watcher does not make the other events be built
    first.close()
    assert bus.listened("a")
    second.close()
    second.close()  # twice: nothing happens
    assert not bus.listened("a")
    everyone = bus.subscribe()
    assert bus.listened("a")
    assert bus.listened("b")
    everyone.close()
    watcher.close()
    bus.publish(_state("b"))
    assert watcher.queue.empty()
    assert not bus.listened("b")
