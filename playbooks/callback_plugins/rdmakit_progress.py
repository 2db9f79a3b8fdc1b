# Progress lines for `pulumi up`: one short line per play and per task with host counts, e.g.
#   [site] TASK nccl : Install libnccl2 — 812/1024 ok, 3 failed
# written to the file descriptor named by $RDMAKIT_PROGRESS_FD (the kit's run script points it at the Command's
# stdout, which @pulumi/command streams as status lines). Only play names, task names and counts are written: never
# a result, a variable or a host's output, so nothing secret can reach the console. Without $RDMAKIT_PROGRESS_FD the
# plugin writes nothing (runs from the CLI and the tests keep their plain output).
# Callback API: ansible-core lib/ansible/plugins/callback/__init__.py (v2_* hooks), as ansible-core 2.14 ships it.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = """
    name: rdmakit_progress
    type: aggregate
    short_description: one status line per play and task with host counts, for pulumi up
    description:
      - Writes short progress lines to the file descriptor in RDMAKIT_PROGRESS_FD; nothing when it is unset.
    requirements:
      - enabled in callbacks_enabled (playbooks/ansible.cfg)
"""

import os
import threading
import time

from ansible.plugins.callback import CallbackBase

# A task that runs long (a DKMS build, a vendor installer) still shows a line this often.
HEARTBEAT_SECONDS = 30


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "rdmakit_progress"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._out = None
        fd = os.environ.get("RDMAKIT_PROGRESS_FD", "")
        if fd.isdigit():
            try:
                self._out = os.fdopen(int(fd), "w", buffering=1, encoding="utf-8", closefd=False)
            except OSError:
                self._out = None
        self._label = os.environ.get("RDMAKIT_PROGRESS_LABEL", "")
        self._lock = threading.Lock()
        self._total = 0
        self._hosts = set()
        # hosts out of the run (a failed host takes no part in the later plays either)
        self._down = {"failed": set(), "unreachable": set()}
        # task key (_key) -> {"name", "ok", "failed", "unreachable", "emitted"}; insertion order is start order
        self._tasks = {}
        self._current = None
        self._linear = True
        self._last_write = time.monotonic()
        if self._out is not None:
            beat = threading.Thread(target=self._heartbeat, name="rdmakit-progress")
            beat.daemon = True
            beat.start()

    # ---- output ----
    def _write(self, text):
        if self._out is None:
            return
        try:
            self._out.write("[%s] %s\n" % (self._label or "ansible", text))
            self._out.flush()
        except (OSError, ValueError):
            self._out = None
        self._last_write = time.monotonic()

    def _counts(self, t):
        parts = ["%d/%d ok" % (t["ok"], self._total)]
        failed = len(self._down["failed"] & self._hosts)
        unreachable = len(self._down["unreachable"] & self._hosts)
        if failed:
            parts.append("%d failed" % failed)
        if unreachable:
            parts.append("%d unreachable" % unreachable)
        return ", ".join(parts)

    def _emit(self, uuid, running=False):
        t = self._tasks.get(uuid)
        if t is None:
            return
        suffix = " (running %ds)" % int(time.monotonic() - t["start"]) if running else ""
        self._write("%s %s \u2014 %s%s" % (t["kind"], t["name"], self._counts(t), suffix))
        if not running:
            t["emitted"] = True

    def _flush(self):
        for uuid, t in list(self._tasks.items()):
            if not t["emitted"] and (t["ok"] or t["seen"]):
                self._emit(uuid)
        self._tasks = {}

    def _heartbeat(self):
        while True:
            time.sleep(5)
            with self._lock:
                if self._current is not None and time.monotonic() - self._last_write >= HEARTBEAT_SECONDS:
                    self._emit(self._current, running=True)

    # ---- hooks ----
    def v2_playbook_on_start(self, playbook):
        if not self._label:
            self._label = os.path.splitext(os.path.basename(playbook._file_name))[0]

    def v2_playbook_on_play_start(self, play):
        with self._lock:
            self._flush()
            hosts = play.get_variable_manager().get_vars(play=play).get("ansible_play_hosts_all", [])
            self._hosts = set(hosts)
            self._total = len(hosts)
            # under the free strategy hosts run different tasks at once: a task's line comes when every host is done
            self._linear = (play.strategy or "linear") != "free"
            self._write("PLAY %s \u2014 %d host%s" % (play.get_name().strip(), self._total, "" if self._total == 1 else "s"))

    @staticmethod
    def _key(task):
        # the task's place in its file: one key for the copies an include makes per host (free strategy), where
        # each copy has its own uuid
        return task.get_path() or task._uuid

    def _start(self, task, kind):
        with self._lock:
            uuid = self._key(task)
            if uuid in self._tasks:
                self._current = uuid
                return
            # linear strategy: the previous task is finished for every host when the next one starts
            for prev, t in self._tasks.items():
                if not t["emitted"] and self._linear:
                    self._emit(prev)
            self._tasks[uuid] = {"name": task.get_name().strip(), "kind": kind, "ok": 0, "seen": 0,
                                 "emitted": False, "start": time.monotonic()}
            self._current = uuid

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._start(task, "TASK")

    def v2_playbook_on_handler_task_start(self, task):
        self._start(task, "HANDLER")

    def _result(self, result, outcome):
        with self._lock:
            uuid = self._key(result._task)
            t = self._tasks.get(uuid)
            if t is None:
                return
            host = result._host.get_name()
            t["seen"] += 1
            if outcome == "ok":
                t["ok"] += 1
                # a host that goes on after a failure was rescued (block/rescue): it is not out of the run
                self._down["failed"].discard(host)
            else:
                self._down[outcome].add(host)
            active = len(self._hosts - self._down["failed"] - self._down["unreachable"])
            if not t["emitted"] and t["ok"] >= active:
                self._emit(uuid)

    def v2_runner_on_ok(self, result):
        self._result(result, "ok")

    def v2_runner_on_skipped(self, result):
        self._result(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._result(result, "ok" if ignore_errors else "failed")

    def v2_runner_on_unreachable(self, result):
        self._result(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        with self._lock:
            self._flush()
            self._current = None
            hosts = sorted(stats.processed.keys())
            bad = [h for h in hosts if stats.summarize(h)["failures"] or stats.summarize(h)["unreachable"]]
            self._write("RECAP \u2014 %d/%d hosts ok%s" % (len(hosts) - len(bad), len(hosts),
                                                          ", %d failed or unreachable" % len(bad) if bad else ""))
