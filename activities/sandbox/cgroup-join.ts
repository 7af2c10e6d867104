/** How every process of a run joins the run's group before it runs (RunCgroups, cgroup-common.ts). */

/**
 * A shell that writes its own pid into each `cgroup.procs` file given, then becomes the command:
 * the process is in the run's group before it runs anything, so nothing it forks escapes.
 */
const JOIN_SCRIPT =
  'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"';

/** argv that joins the run's group (its `procsFiles`) and then runs `file args…`. */
export function joinArgv(procsFiles: string[], file: string, args: string[]): { file: string; args: string[] } {
  return {
    file: '/bin/sh',
    args: ['-c', JOIN_SCRIPT, 'cgroup-join', String(procsFiles.length), ...procsFiles, file, ...args],
  };
}
