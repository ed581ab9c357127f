"""Machine track: what the agent left running is frozen before the verifier runs (issue 48).

On the machine track the verifier runs in the agent's own machine, and the processes the agent
left there are part of what is graded: a web server, a database, a VM the task asked for. They
are also what could rewrite the verifier's outputs once the tests ran (a watcher waiting for
test.sh, stopping it, rewriting the channel, the JUnit file and the reward, letting it go on).

So before anything of the verification runs, every process the agent left is stopped with
SIGSTOP (frozen: it keeps its memory and files, it runs no more, and SIGSTOP cannot be caught
or ignored) except the services the tests may talk to: a process holding a listening socket
(TCP, UDP or a unix socket; read from /proc/net and each process's descriptors) and its
descendants (an nginx's workers, a database's helpers). Not a service: the harness's own
terminal (a tmux server, whose sockets are the agent's panes, not the task's), the container's
init and its idle `sleep` (idle.py), and this command itself. Nor frozen: the Residual State's
own processes, alive before the agent started (`state_processes`, read when the state was
restored), and their descendants, but never through the terminal server. The scan runs again until a
round finds nothing new to freeze (a process that forked between two looks). What was kept
running is named in the verifier's notes: a kept process can still act while the tests run,
and the streamed channel (verifier/channel.py) and the hidden-file hashes are then what hold.
Once the verdict is read, the frozen processes are let go on (SIGCONT), so whatever reads the
machine afterwards (Stage IV's replay checks) finds it as the agent left it.

The scan is a POSIX shell script of builtins, `ls` (one per process, for its descriptors) and
`kill`'s builtin; the toolchain check (toolchain.py) has already compared `sh` and `ls` with the
clean image's. When it cannot run (the container is at its pids limit, something killed it),
every leftover process is killed instead (the container restarted, as on the repo track), and
the notes say so: a verifier that misses a service then fails, which is the agent's doing.
"""

from __future__ import annotations

from dataclasses import dataclass

from swe_residual.environments.docker import harness_tools

FREEZE_ROUNDS = 5

# $1: the pattern of a process title that is the harness's terminal, not a service; $2: the
# Residual State's own processes ("pid:start-time", alive before the agent started).
_SCRIPT = r'''
terminal=$1
own=" $2 "
listen=" "
for f in /proc/net/tcp /proc/net/tcp6; do
  [ -r "$f" ] || continue
  while read -r sl la ra st q t r u to ino rest; do [ "$st" = 0A ] && listen="$listen$ino "; done < "$f"
done
for f in /proc/net/udp /proc/net/udp6; do
  [ -r "$f" ] || continue
  while read -r sl la ra st q t r u to ino rest; do [ "$st" = 07 ] && listen="$listen$ino "; done < "$f"
done
if [ -r /proc/net/unix ]; then
  while read -r num ref proto flags type st ino rest; do
    [ "$flags" = 00010000 ] && [ "$st" = 01 ] && listen="$listen$ino "
  done < /proc/net/unix
fi
me=$$
round=0
while [ $round -lt FREEZE_ROUNDS ]; do
  round=$((round + 1))
  pids=""
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = 1 ] && continue
    { read -r line < "$d/stat"; } 2>/dev/null || continue
    rest=${line##*) }
    set -- $rest
    eval "state_$p=$1 pp_$p=$2 start_$p=${20}"
    pids="$pids $p"
  done
  services=" "
  for p in $pids; do
    { read -r comm < "/proc/$p/comm"; } 2>/dev/null || continue
    case "$comm" in $terminal) continue ;; esac
    out=$(ls -l "/proc/$p/fd" 2>/dev/null)
    for w in $out; do
      case "$w" in
        socket:\[*\]) i=${w#socket:[}; i=${i%]}; case "$listen" in *" $i "*) services="$services$p "; break ;; esac ;;
      esac
    done
  done
  frozen=""
  for p in $pids; do
    eval "st=\$state_$p"
    case "$st" in T|t|Z|X) continue ;; esac
    keep=""
    q=$p
    hops=0
    while [ -n "$q" ] && [ "$q" != 0 ] && [ "$q" != 1 ] && [ $hops -lt 64 ]; do
      { [ "$q" = "$me" ] || [ "$q" = "$PPID" ]; } && { keep=self; break; }  # this scan, its `timeout`
      # Nothing is kept through the terminal: the agent's own panes are its children too.
      if [ "$q" != "$p" ]; then
        { read -r qc < "/proc/$q/comm"; } 2>/dev/null && case "$qc" in $terminal) break ;; esac
      fi
      case "$services" in *" $q "*) keep=service; break ;; esac
      eval "qs=\$start_$q"
      case "$own" in *" $q:$qs "*) keep=state; break ;; esac
      eval "q=\$pp_$q"
      hops=$((hops + 1))
    done
    if [ -z "$keep" ]; then
      eval "pp=\$pp_$p"
      if [ "$pp" = 1 ] && { [ /proc/$p/exe -ef /bin/sleep ] || [ /proc/$p/exe -ef /usr/bin/sleep ]; }; then
        keep=idle
      fi
    fi
    case "$keep" in
      service) [ $round = 1 ] && { read -r comm < "/proc/$p/comm"; } 2>/dev/null && echo "kept $p $comm" ;;
      state) [ $round = 1 ] && { read -r comm < "/proc/$p/comm"; } 2>/dev/null && echo "state $p $comm" ;;
      "") frozen="$frozen $p" ;;
    esac
  done
  [ -z "$frozen" ] && exit 0
  kill -STOP $frozen 2>/dev/null
  for p in $frozen; do { read -r comm < "/proc/$p/comm"; } 2>/dev/null && echo "frozen $p $comm"; done
done
exit 0
'''.replace("FREEZE_ROUNDS", str(FREEZE_ROUNDS))

# A tmux (or screen) server is the agent's terminal: its listening socket serves its panes.
TERMINAL_TITLES = "tmux*|screen*|SCREEN*"


@dataclass(frozen=True)
class Frozen:
    """What was done to the agent's leftover processes before verification."""

    frozen: tuple[str, ...] = ()  # "pid name" of each process stopped
    kept: tuple[str, ...] = ()  # "pid name" of each service left running
    state: tuple[str, ...] = ()  # "pid name" of each process of the Residual State itself, left running
    killed: bool = False  # the scan could not run: every leftover process was killed instead
    reason: str = ""

    def notes(self) -> tuple[str, ...]:
        if self.killed:
            return (f"the processes the agent left could not be frozen ({self.reason}): all were killed "
                    "before the verifier ran",)
        notes: list[str] = []
        if self.frozen:
            notes.append(f"frozen before the verifier ran: {len(self.frozen)} process(es) the agent left "
                         f"({_names(self.frozen)})")
        if self.kept:
            notes.append(f"kept running during verification as services (a listening socket): "
                         f"{len(self.kept)} process(es) ({_names(self.kept)})")
        if self.state:
            notes.append(f"kept running during verification as the Residual State's own (alive before the agent "
                         f"started): {len(self.state)} process(es) ({_names(self.state)})")
        return tuple(notes)


def thaw(environment: object, frozen: Frozen) -> None:
    """Let the frozen processes go on once the verdict is read (SIGCONT): the machine is again
    as the agent left it, for whatever reads it after the verifier (Stage IV's replay checks)."""
    pids = [entry.split(" ", 1)[0] for entry in frozen.frozen]
    if pids:
        try:
            environment.run(["sh", "-c", 'kill -CONT "$@" 2>/dev/null; exit 0', "sh", *pids], timeout_sec=30)  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - a container gone after its verdict: nothing to let go on
            pass


def _names(entries: tuple[str, ...]) -> str:
    shown = ", ".join(entries[:6])
    return shown + (f" and {len(entries) - 6} more" if len(entries) > 6 else "")


def freeze_leftovers(environment: object) -> Frozen:
    """Freeze what the agent left running in a DockerEnvironment's container (module docstring)."""
    client, container_id = environment.client, environment.container_id  # type: ignore[attr-defined]
    if not harness_tools.leftover_processes(client, container_id):
        return Frozen()
    own = " ".join(environment.state_processes)  # type: ignore[attr-defined]
    done = environment.run(["sh", "-c", _SCRIPT, "sh", TERMINAL_TITLES, own], timeout_sec=60)  # type: ignore[attr-defined]
    if done.exit_code != 0:
        failure = f"the scan exited {done.exit_code}: {done.stderr.decode(errors='replace')[-200:].strip()}"
        environment.stop_processes()  # type: ignore[attr-defined]
        return Frozen(killed=True, reason=failure)
    found: dict[str, list[str]] = {"frozen": [], "kept": [], "state": []}
    for line in done.stdout.decode(errors="replace").splitlines():
        kind, _, entry = line.partition(" ")
        if kind in found:
            found[kind].append(entry)
    return Frozen(tuple(found["frozen"]), tuple(found["kept"]), state=tuple(found["state"]))


# Every process now: "pid:start-time" (field 22 of /proc/PID/stat), which names a process even
# once its pid is reused.
_STATE_SCRIPT = r'''for d in /proc/[0-9]*; do
  { read -r line < "$d/stat"; } 2>/dev/null || continue
  rest=${line##*) }; set -- $rest; echo "${d#/proc/}:${20}"
done'''


def state_processes(environment: object) -> tuple[str, ...]:
    """The processes of a restored Residual State before the agent starts (a predecessor's
    ticker, server or shell left running): part of the state, not the agent's leftovers, so they
    are never frozen before the verifier. Empty when they cannot be listed (all are then judged
    as the agent's)."""
    done = environment.run(["sh", "-c", _STATE_SCRIPT], timeout_sec=30)  # type: ignore[attr-defined]
    return tuple(done.stdout.decode(errors="replace").split()) if done.exit_code == 0 else ()
