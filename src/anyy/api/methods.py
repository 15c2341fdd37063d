"""The methods of the API by name: each one's parameters and result type. The Gateway serves exactly
these (its handlers are registered against them) and clients decode each result into its type.

``MethodSpec[P, R]`` is generic in both, so a typed client can say ``call(SESSION_GET, SessionRef(…))``
and get a :class:`SessionView` back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from anyy.api import channels as ch
from anyy.api import devices as dv
from anyy.api import params as p
from anyy.api import schedules as sch
from anyy.api.entries import EntryView
from anyy.api.gateway import BackupReport, DashboardCode, Models, RenderResult, Status, Subscribed
from anyy.api.residents import Resident, ResidentCreated, ResidentCreateParams, ResidentRef, ResidentUpdateParams
from anyy.api.sessions import (
    CompactResult,
    DelegatedTask,
    Execution,
    ExportResult,
    FilesDiff,
    ForkResult,
    GoalResult,
    Modes,
    NavigateResult,
    Page,
    ReloadStep,
    SearchHit,
    Session,
    SessionView,
    StopResult,
    Submission,
    TreeView,
)
from anyy.api.usage import Budgets, BudgetSetParams, UsageParams, UsageReport

P = TypeVar("P", bound=p.Params)
R = TypeVar("R")


@dataclass(frozen=True)
class MethodSpec(Generic[P, R]):
    name: str
    params: type[P]
    result: Any  # the result's type (a Struct, ``list[…]``, ``… | None``, ``None``): what R stands for
    websocket_only: bool = False


SESSION_CREATE: MethodSpec[p.CreateParams, Session] = MethodSpec("session.create", p.CreateParams, Session)
SESSION_GET: MethodSpec[p.SessionRef, SessionView] = MethodSpec("session.get", p.SessionRef, SessionView)
SESSION_CHILDREN: MethodSpec[p.SessionRef, list[DelegatedTask]] = MethodSpec(
    "session.children", p.SessionRef, list[DelegatedTask]
)
SESSION_LIST: MethodSpec[p.ListParams, Page[Session]] = MethodSpec("session.list", p.ListParams, Page[Session])
SESSION_HISTORY: MethodSpec[p.PageParams, Page[EntryView]] = MethodSpec(
    "session.history", p.PageParams, Page[EntryView]
)
SESSION_TREE: MethodSpec[p.SessionRef, TreeView] = MethodSpec("session.tree", p.SessionRef, TreeView)
SESSION_SEARCH: MethodSpec[p.SearchParams, list[SearchHit]] = MethodSpec(
    "session.search", p.SearchParams, list[SearchHit]
)
SESSION_RENAME: MethodSpec[p.RenameParams, Session] = MethodSpec("session.rename", p.RenameParams, Session)
SESSION_SEND: MethodSpec[p.SendParams, Submission] = MethodSpec("session.send", p.SendParams, Submission)
SESSION_STOP: MethodSpec[p.ExecutionRef, StopResult] = MethodSpec("session.stop", p.ExecutionRef, StopResult)
SESSION_RETRY_CANCEL: MethodSpec[p.ExecutionRef, StopResult] = MethodSpec(
    "session.retry.cancel", p.ExecutionRef, StopResult
)
SESSION_RETRY_NOW: MethodSpec[p.ExecutionRef, StopResult] = MethodSpec("session.retry.now", p.ExecutionRef, StopResult)
SESSION_EXECUTION: MethodSpec[p.ExecutionRef, Execution] = MethodSpec("session.execution", p.ExecutionRef, Execution)
SESSION_ANSWER: MethodSpec[p.AnswerParams, None] = MethodSpec("session.answer", p.AnswerParams, None)
SESSION_APPROVE: MethodSpec[p.ApproveParams, None] = MethodSpec("session.approve", p.ApproveParams, None)
SESSION_NAVIGATE: MethodSpec[p.NavigateParams, NavigateResult] = MethodSpec(
    "session.navigate", p.NavigateParams, NavigateResult
)
SESSION_FILES_DIFF: MethodSpec[p.FilesDiffParams, FilesDiff] = MethodSpec(
    "session.files.diff", p.FilesDiffParams, FilesDiff
)
SESSION_COMPACT: MethodSpec[p.SessionRef, CompactResult] = MethodSpec("session.compact", p.SessionRef, CompactResult)
SESSION_SETTINGS: MethodSpec[p.SettingsParams, Session] = MethodSpec("session.settings", p.SettingsParams, Session)
SESSION_EXPORT: MethodSpec[p.ExportParams, ExportResult] = MethodSpec("session.export", p.ExportParams, ExportResult)
SESSION_FORK: MethodSpec[p.ForkParams, ForkResult] = MethodSpec("session.fork", p.ForkParams, ForkResult)
SESSION_DELETE: MethodSpec[p.SessionRef, None] = MethodSpec("session.delete", p.SessionRef, None)

QUEUE_PEEK: MethodSpec[p.SessionRef, Submission | None] = MethodSpec(
    "session.queue.peek", p.SessionRef, Submission | None
)
QUEUE_LIST: MethodSpec[p.SessionRef, list[Submission]] = MethodSpec(
    "session.queue.list", p.SessionRef, list[Submission]
)
QUEUE_CLEAR: MethodSpec[p.ClearParams, list[Submission]] = MethodSpec(
    "session.queue.clear", p.ClearParams, list[Submission]
)
QUEUE_STEER: MethodSpec[p.ItemRef, Submission] = MethodSpec("session.queue.steer", p.ItemRef, Submission)
QUEUE_UPDATE: MethodSpec[p.UpdateParams, Submission] = MethodSpec("session.queue.update", p.UpdateParams, Submission)
QUEUE_CANCEL: MethodSpec[p.ItemRef, Submission] = MethodSpec("session.queue.cancel", p.ItemRef, Submission)
QUEUE_MODES: MethodSpec[p.ModesParams, Modes] = MethodSpec("session.queue.modes", p.ModesParams, Modes)

SESSION_GOAL: MethodSpec[p.GoalParams, GoalResult] = MethodSpec("session.goal", p.GoalParams, GoalResult)
SESSION_RELOAD: MethodSpec[p.SessionRef, list[ReloadStep]] = MethodSpec(
    "session.reload", p.SessionRef, list[ReloadStep]
)
SESSION_TOOLS_CONFIGURE: MethodSpec[p.ToolsParams, Session] = MethodSpec(
    "session.tools.configure", p.ToolsParams, Session
)
SESSION_CONTINUE: MethodSpec[p.SessionRef, None] = MethodSpec("session.continue", p.SessionRef, None)
SESSION_WAIT: MethodSpec[p.WaitParams, Submission] = MethodSpec("session.wait", p.WaitParams, Submission)
MODELS_LIST: MethodSpec[p.NoParams, Models] = MethodSpec("models.list", p.NoParams, Models)
GATEWAY_STATUS: MethodSpec[p.NoParams, Status] = MethodSpec("gateway.status", p.NoParams, Status)
EVENTS_SUBSCRIBE: MethodSpec[p.SubscribeParams, Subscribed] = MethodSpec(
    "events.subscribe", p.SubscribeParams, Subscribed, websocket_only=True
)
EVENTS_UNSUBSCRIBE: MethodSpec[p.UnsubscribeParams, None] = MethodSpec(
    "events.unsubscribe", p.UnsubscribeParams, None, websocket_only=True
)
PROFILE_BACKUP: MethodSpec[p.BackupParams, BackupReport] = MethodSpec("profile.backup", p.BackupParams, BackupReport)
DASHBOARD_CODE: MethodSpec[p.NoParams, DashboardCode] = MethodSpec("dashboard.code", p.NoParams, DashboardCode)
MARKDOWN_RENDER: MethodSpec[p.RenderParams, RenderResult] = MethodSpec("markdown.render", p.RenderParams, RenderResult)
RESIDENT_CREATE: MethodSpec[ResidentCreateParams, ResidentCreated] = MethodSpec(
    "resident.create", ResidentCreateParams, ResidentCreated
)
RESIDENT_LIST: MethodSpec[p.NoParams, list[Resident]] = MethodSpec("resident.list", p.NoParams, list[Resident])
RESIDENT_GET: MethodSpec[ResidentRef, Resident] = MethodSpec("resident.get", ResidentRef, Resident)
RESIDENT_UPDATE: MethodSpec[ResidentUpdateParams, ResidentCreated] = MethodSpec(
    "resident.update", ResidentUpdateParams, ResidentCreated
)
RESIDENT_PAUSE: MethodSpec[ResidentRef, Resident] = MethodSpec("resident.pause", ResidentRef, Resident)
RESIDENT_RESUME: MethodSpec[ResidentRef, Resident] = MethodSpec("resident.resume", ResidentRef, Resident)
RESIDENT_DELETE: MethodSpec[ResidentRef, Resident] = MethodSpec("resident.delete", ResidentRef, Resident)

SCHEDULE_CREATE: MethodSpec[sch.ScheduleCreateParams, sch.Schedule] = MethodSpec(
    "schedule.create", sch.ScheduleCreateParams, sch.Schedule
)
SCHEDULE_LIST: MethodSpec[p.NoParams, list[sch.Schedule]] = MethodSpec("schedule.list", p.NoParams, list[sch.Schedule])
SCHEDULE_GET: MethodSpec[sch.ScheduleRef, sch.Schedule] = MethodSpec("schedule.get", sch.ScheduleRef, sch.Schedule)
SCHEDULE_UPDATE: MethodSpec[sch.ScheduleUpdateParams, sch.Schedule] = MethodSpec(
    "schedule.update", sch.ScheduleUpdateParams, sch.Schedule
)
SCHEDULE_PAUSE: MethodSpec[sch.ScheduleRef, sch.Schedule] = MethodSpec("schedule.pause", sch.ScheduleRef, sch.Schedule)
SCHEDULE_RESUME: MethodSpec[sch.ScheduleRef, sch.Schedule] = MethodSpec(
    "schedule.resume", sch.ScheduleRef, sch.Schedule
)
SCHEDULE_DELETE: MethodSpec[sch.ScheduleRef, None] = MethodSpec("schedule.delete", sch.ScheduleRef, None)
SCHEDULE_RUN_NOW: MethodSpec[sch.ScheduleRef, sch.ScheduleRun] = MethodSpec(
    "schedule.run_now", sch.ScheduleRef, sch.ScheduleRun
)
SCHEDULE_RUNS: MethodSpec[sch.ScheduleRunsParams, list[sch.ScheduleRun]] = MethodSpec(
    "schedule.runs", sch.ScheduleRunsParams, list[sch.ScheduleRun]
)
DEVICES_PAIR: MethodSpec[dv.PairParams, dv.Pairing] = MethodSpec("devices.pair", dv.PairParams, dv.Pairing)
DEVICES_LIST: MethodSpec[p.NoParams, dv.DeviceList] = MethodSpec("devices.list", p.NoParams, dv.DeviceList)
DEVICES_REVOKE: MethodSpec[dv.DeviceRef, dv.Device] = MethodSpec("devices.revoke", dv.DeviceRef, dv.Device)

CHANNEL_LIST: MethodSpec[p.NoParams, list[ch.Channel]] = MethodSpec("channel.list", p.NoParams, list[ch.Channel])
CHANNEL_GET: MethodSpec[ch.ChannelRef, ch.ChannelDetail] = MethodSpec("channel.get", ch.ChannelRef, ch.ChannelDetail)
CHANNEL_PAIR: MethodSpec[ch.ChannelPairParams, ch.ChannelSender] = MethodSpec(
    "channel.pair", ch.ChannelPairParams, ch.ChannelSender
)
CHANNEL_UNPAIR: MethodSpec[ch.ChannelUnpairParams, int] = MethodSpec("channel.unpair", ch.ChannelUnpairParams, int)
CHANNEL_RELOAD: MethodSpec[p.NoParams, list[str]] = MethodSpec("channel.reload", p.NoParams, list[str])
CHANNEL_FORGET: MethodSpec[ch.ChannelRef, None] = MethodSpec("channel.forget", ch.ChannelRef, None)
# Money (Y1-Y3): what model calls cost, and the budgets that stop them.
USAGE_REPORT: MethodSpec[UsageParams, UsageReport] = MethodSpec("usage.report", UsageParams, UsageReport)
BUDGET_LIST: MethodSpec[p.NoParams, Budgets] = MethodSpec("budget.list", p.NoParams, Budgets)
BUDGET_SET: MethodSpec[BudgetSetParams, Budgets] = MethodSpec("budget.set", BudgetSetParams, Budgets)

METHODS: dict[str, MethodSpec[Any, Any]] = {
    spec.name: spec for spec in list(globals().values()) if isinstance(spec, MethodSpec)
}
"""Every method of the API, by name."""
