/**
 * What a command (or helper) may try on its sandbox's server, the sandbox's pid 1, from inside,
 * and what it prints when all of it failed (then whether the network bridge is up).
 */
export const SERVER_ATTACK = [
  'exec 2>&1',
  'echo before',
  'kill -9 -1 2>/dev/null',
  'for s in KILL STOP TERM HUP INT QUIT SEGV USR1 PIPE; do kill -$s 1; done',
  'for s in SEGV BUS FPE ILL TRAP SYS STKFLT; do /usr/bin/kill -q 0 -s $s 1 && echo queued-$s; done',
  // By the id of any of its threads (prlimit takes those too); its own limits it may still set.
  'n=0; r=0; for t in /proc/1/task/*; do n=$((n+1)); prlimit --pid ${t##*/} --cpu=1:1 --nofile=3:3 2>&1 | grep -q "Operation not permitted" && r=$((r+1)); done',
  '[ $n -gt 1 ] && [ $r = $n ] && echo limits-refused-on-every-thread',
  "prlimit --nofile=64:64 bash -c 'echo own-limit-$(ulimit -n)'",
  'echo after',
  '(echo > /dev/tcp/127.0.0.1/3128) 2>/dev/null && echo bridge-open || echo no-bridge',
].join('; ');
export const SERVER_ATTACKED = `before\n${['SEGV', 'BUS', 'FPE', 'ILL', 'TRAP', 'SYS', 'STKFLT'].map((s) => `queued-${s}\n`).join('')}limits-refused-on-every-thread\nown-limit-64\nafter\n`;
