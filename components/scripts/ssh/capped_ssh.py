#!/usr/bin/env python3
"""rdmakit's ssh for Ansible runs (ANSIBLE_SSH_EXECUTABLE; components/provision/node-send.ts installs it).

Runs the real ssh (the first `ssh` on PATH) with the arguments Ansible gave, its stdin passed through untouched, and
passes on at most RDMAKIT_NODE_SEND_MAX_BYTES bytes of what comes back, stdout and stderr together. A node that sends
more gets its ssh stopped there: this prints one line naming the host and the bound on stderr and exits OVER_CAP, so
Ansible never holds more than the bound for one command. A fetch's file (below) is held back until it is all in, so
one past the bound reaches neither the destination nor the error Ansible logs.

What Ansible does with this program (ansible-core 2.14.18, lib/ansible/plugins/connection/ssh.py, the controller
Ansible .ci/run installs; line numbers of that file):
- every command it runs on a node is `<ssh_executable> <options> <host> <command>` (exec_command :1292, its
  _build_command :648), and it reads the whole of stdout and stderr into memory before it looks at them (_bare_run
  :889, `b_stdout += b_tmp_stdout` :1074);
- with ssh_transfer_method `piped` (:291) a fetch is such a command too, `dd if=<file> bs=65536`, whose stdout
  Ansible then writes to the destination file (_file_transport_command :1191, the `piped` branch :1247); sftp and scp
  would write to disk themselves;
- exit status 255 is ssh's own failure, which Ansible tries again (_ssh_retry :469, :443), so OVER_CAP is not 255:
  a failed file transfer is tried again all the same (_file_transport_command raises, _ssh_retry retries), each try
  stopped at the bound again;
- on a timeout it ends this process with SIGTERM (_terminate_process :831): the signal goes on to ssh.
The same holds in the ansible-core 2.15.13 and 2.17.14 wheels components/provision/node-python.ts pins (2.17 quotes
the path: `dd if='<file>' bs=65536`, :1253).
With ControlPersist each command is a new ssh that joins the master through its control socket; the first one forks
the master into the background and stays as that command's client (openssh-portable ssh.c control_persist_detach).
The master may keep the stderr it was started with (older releases pointed only stdin and stdout at /dev/null; current
ones keep stderr when logging there under -v: ssh.c stdfd_devnull(1, 1, !(log_is_on_stderr() && debug_flag)); and
Ansible's own note in _bare_run: "the first connection goes into the background and we never see EOF on stderr"), so
the end of a command is ssh's exit, not the end of its pipes: once ssh has exited, what is already in the pipes is
passed on and nothing more is waited for.
"""
import os
import re
import selectors
import signal
import subprocess
import sys

# ssh's own option letters (openssh-portable ssh.c, its getopt string in OpenSSH 9.2p1, Debian 12's ssh; a letter
# before ':' takes a value; later releases give -P a value, which Ansible never passes): the first word that is not an
# option or its value is the destination Ansible named. Used only to name the host in the message.
SSH_OPTIONS = "1246ab:c:e:fgi:kl:m:no:p:qstvxAB:CD:E:F:GI:J:KL:MNO:PQ:R:S:TVw:W:XYy"
TAKES_VALUE = {c: SSH_OPTIONS[k + 1:k + 2] == ":" for k, c in enumerate(SSH_OPTIONS) if c != ":"}
OVER_CAP = 3
USAGE = 2
CHUNK = 65536
# after the bound is passed: how long ssh has to end on SIGTERM before SIGKILL
GRACE_S = 2.0
POLL_S = 0.2


def say(text):
    try:
        os.write(2, ("rdmakit-ssh: " + text + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


def parse(argv):
    """(the host as Ansible named it, printable and at most 100 characters, or "?"; the words after it). Read as
    getopt(3) reads ssh's options (a letter that takes a value takes the rest of its word, or the next word)."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        for j in range(1, len(word)):
            if TAKES_VALUE.get(word[j], False):
                if j == len(word) - 1:
                    i += 1
                break
        i += 1
    if i >= len(argv):
        return "?", []
    return re.sub(r"[^A-Za-z0-9._:@\[\]%-]", "?", argv[i])[:100] or "?", argv[i + 1:]


def is_fetch(command):
    """Ansible's piped fetch: the one command `dd if=<file> bs=<BUFSIZE>` (ssh.py :1251), no become around it."""
    return len(command) == 1 and re.fullmatch(r"dd if=.+ bs=[0-9]+", command[0], re.S) is not None


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def stop(proc):
    """SIGTERM, then SIGKILL after GRACE_S: ends within about GRACE_S whatever ssh does."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def exit_like(proc):
    """This process ends as ssh ended: its status, or the signal that ended it."""
    rc = proc.returncode
    if rc is not None and rc < 0:
        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
        return 128 - rc
    return rc if rc is not None else 255


def relay(proc, cap, host, out):
    """Passes ssh's stdout (to `out`) and stderr on until ssh has exited and its pipes hold nothing; False past the
    bound."""
    sel = selectors.DefaultSelector()
    for pipe, target in ((proc.stdout, out), (proc.stderr, 2)):
        os.set_blocking(pipe.fileno(), False)
        sel.register(pipe.fileno(), selectors.EVENT_READ, target)
    sent = 0
    try:
        while sel.get_map():
            exited = proc.poll() is not None
            events = sel.select(0 if exited else POLL_S)
            if not events:
                if exited:
                    # ssh is gone and its pipes are empty: whoever still holds them (the ControlPersist master) is
                    # not this command
                    return True
                continue
            for key, _ in events:
                try:
                    chunk = os.read(key.fd, CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                room = cap - sent
                write_all(key.data, chunk[:room])
                sent += min(len(chunk), room)
                if len(chunk) > room:
                    say("%s sent more than %d bytes (stdout and stderr together) for one command: stopped there and "
                        "failed (the controller's bound on what a node sends, RDMAKIT_NODE_SEND_MAX_BYTES)" % (host, cap))
                    return False
        return True
    finally:
        sel.close()


def main(argv):
    raw = os.environ.get("RDMAKIT_NODE_SEND_MAX_BYTES", "")
    if not re.fullmatch(r"[1-9][0-9]{0,15}", raw):
        say("RDMAKIT_NODE_SEND_MAX_BYTES is %r: a whole number of bytes is needed (the kit's run scripts set it)" % raw[:40])
        return USAGE
    cap = int(raw)
    host, command = parse(argv)
    # A fetch's file is held back (in an unlinked file here, at most the bound) and passed on only once it is all
    # in: past the bound Ansible gets none of it, so none lands in the destination or in the error it logs. Every
    # other command streams: under become Ansible reads the prompt or the success line before it sends a pipelined
    # module (_bare_run :979, :1011), and a command held back until its end would wait for that module forever (seen:
    # sudo with pipelining, "Timeout (32s) waiting for privilege escalation prompt", :1030).
    spool = None
    if is_fetch(command):
        import tempfile  # only here: most commands are not fetches, and this runs once per command
        spool = tempfile.TemporaryFile(prefix="rdmakit-ssh.")
    try:
        proc = subprocess.Popen(["ssh"] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        say("cannot start ssh: %s" % e)
        return 255

    def forward(signum, _frame):
        if proc.poll() is None:
            proc.send_signal(signum)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, forward)
    try:
        within = relay(proc, cap, host, spool.fileno() if spool else 1)
        if within and spool:
            spool.seek(0)
            for block in iter(lambda: spool.read(CHUNK), b""):
                write_all(1, block)
    except BrokenPipeError:
        # Ansible closed its end: nobody reads what ssh sends any more
        stop(proc)
        return 255
    if not within:
        proc.stdout.close()
        proc.stderr.close()
        stop(proc)
        return OVER_CAP
    proc.wait()
    return exit_like(proc)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
