"""The Background tab's words (K4): what started each session (a schedule's run, a delegated task, a
resident and its triggers), what it is doing and how its last execution ended, and the lists one
keystroke away in the session picker — a schedule's runs, a parent's delegated tasks."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text

from anyy.api.residents import Resident
from anyy.api.schedules import ScheduleRun
from anyy.api.sessions import Activity, DelegatedTask, Origin, Session
from anyy.domain.sessions import activity_words

# The state's mark and colour: what needs the user stands out (a question), failures are red.
_MARKS: dict[str, tuple[str, str]] = {
    "running": ("●", "bold green"),
    "retrying": ("↻", "yellow"),
    "waiting_answer": ("?", "bold magenta"),
    "waiting_tasks": ("⋯", "cyan"),
    "queued": ("‖", "yellow"),
}
_OUTCOMES: dict[str, tuple[str, str]] = {
    "completed": ("✓", "green"),
    "failed": ("✗", "bold red"),
    "timed_out": ("✗", "bold red"),
    "budget_exhausted": ("$", "bold yellow"),
    "interrupted": ("!", "yellow"),
}


def when(moment: float | None) -> str:
    # Marked with the zone: a schedule's own times are shown in its zone, these in the local one.
    return "never" if moment is None else datetime.fromtimestamp(moment).astimezone().strftime("%Y-%m-%d %H:%M %Z")


def _every(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes / 60:g} h" if minutes >= 60 and minutes % 60 == 0 else f"{minutes:g} min"


def resident_triggers(resident: Resident) -> str:
    """A resident's triggers and wakes: "heartbeat every 30 min, webhook; last woken by webhook at …"."""
    triggers = [f"heartbeat every {_every(resident.heartbeat_seconds)}"] if resident.heartbeat_seconds else []
    if resident.webhook:
        triggers.append(f"webhook {resident.webhook_path}")
    words = ", ".join(triggers) or "messages only"
    if resident.paused:
        words += "; paused"
    if resident.last_wake_at is not None:
        words += f"; last woken by {resident.last_trigger or 'a trigger'} at {when(resident.last_wake_at)}"
    if resident.next_wake_at is not None and not resident.paused:
        words += f"; next {when(resident.next_wake_at)}"
    return words


def origin_label(origin: Origin, residents: dict[str, Resident] | None = None) -> str:
    """What started a Background session, and the key that lists what goes with it."""
    if origin.kind == "schedule":
        return f"schedule {origin.name}, run for {when(origin.scheduled_for)} (Ctrl+R: its runs)"
    if origin.kind == "delegate":
        return f"delegated by {origin.parent_session_id} (Ctrl+R: the parent's tasks)"
    if origin.kind == "import":
        return f"imported from {(origin.source or '').replace(':', ': ', 1)}"
    resident = (residents or {}).get(origin.resident_id or "")
    triggers = f" · {resident_triggers(resident)}" if resident is not None else ""
    return f"resident {origin.name or origin.resident_id}{triggers}"


def activity_label(activity: Activity) -> Text:
    """The state, marked and coloured, then the last outcome in words."""
    mark, style = _MARKS.get(activity.state) or _OUTCOMES.get(activity.outcome or "", ("○", "dim"))
    return Text.assemble((f"{mark} ", style), (activity_words(activity), style))


def background_lines(session: Session, residents: dict[str, Resident] | None) -> Text:
    """The lines under a Background session's title: its state, then what started it."""
    lines = Text()
    if session.activity is not None:
        lines.append("\n  ")
        lines.append_text(activity_label(session.activity))
        if session.activity.tasks:
            lines.append(" (Ctrl+T: its tasks)", style="dim")
    if session.origin is not None:
        lines.append(f"\n  {origin_label(session.origin, residents)}", style="dim")
    return lines


def run_label(name: str, run: ScheduleRun) -> Text:
    mark, style = _OUTCOMES.get(run.outcome, _MARKS.get(run.outcome, ("●", "")))
    label = Text.assemble((f"{mark} ", style), f"{name} · run for {when(run.scheduled_for)} · ", (run.outcome, style))
    if run.error:
        label.append(f" ({run.error})", style="red")
    label.append(f" · {run.session_id or 'no session'}", style="dim")
    return label


_TASK_STATES: dict[str, tuple[str, str]] = {
    "waiting": ("‖", "yellow"),
    "running": ("●", "bold green"),
    "cancelled": ("!", "yellow"),
}


def task_label(task: DelegatedTask) -> Text:
    """One delegated task: its state, brief, then its answer or failure, cut short."""
    finished = ("✗", "bold red") if task.is_error else ("✓", "green")
    mark, style = finished if task.state == "finished" else _TASK_STATES.get(task.state, ("●", ""))
    state = "failed" if task.state == "finished" and task.is_error else task.state
    label = Text.assemble((f"{mark} {state}", style), " · ", " ".join(task.brief.split())[:100])
    label.append(f" · {task.child_session_id}", style="dim")
    if task.result:
        label.append(f"\n  {' '.join(task.result.split())[:160]}", style="red" if task.is_error else "")
    return label


def session_label_parent(parent_id: str) -> Text:
    """The parent's line at the top of its tasks."""
    return Text.assemble(("↑ the parent session", "bold"), (f" · {parent_id}", "dim"))
