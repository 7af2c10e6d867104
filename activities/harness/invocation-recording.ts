import { createReadStream } from 'node:fs';
import type { DataSource } from 'typeorm';
import type { CliHarnessType } from '../../core/harnesses';
import { recordFileArtifact } from '../../db/artifacts';
import type { BlobStore } from '../../db/blob-store';
import { addHarnessUsage } from '../../db/harness-state';
import { CLI_HARNESS_ADAPTERS } from './cli-harnesses';
import { HarnessTranscript, JsonLines, type InvocationReport } from './harness-transcript';
import { leftOverOutputs, removeInvocationOutput } from './invocation-output';
import { MAX_FOLLOWED_BYTES } from '../sandbox/file-tail';
import { RawEventLog } from './raw-event-log';

/** The largest raw event stream kept as an artifact per invocation; the rest is cut. */
const MAX_RAW_LOG_BYTES = 16 * 1024 * 1024;

/** Which invocation: HarnessTranscript's turn, step and attempt key. */
export interface InvocationAt {
  turn: number;
  step: number;
  attempt: string;
}

/**
 * How a run's CLI invocations are recorded: each line of a CLI's output through its harness's
 * translator into the transcript, and the raw stream as an artifact. The same for an invocation
 * as it runs and for one whose worker died before it had recorded all it printed.
 */
export function invocationRecording(
  deps: { dataSource: DataSource; blobs: BlobStore; outputLimitBytes: number; workspaceRoot: string },
  run: { runId: string; type: CliHarnessType; title: string; version?: string; model?: string },
) {
  const { dataSource, blobs } = deps;
  const { runId, type } = run;

  /** Takes an invocation's output as it comes: `lines.write` each chunk, `lines.end`, then `transcript.flushed`. */
  const recorder = (at: InvocationAt) => {
    const transcript = new HarnessTranscript(
      { dataSource, outputLimitBytes: deps.outputLimitBytes },
      { runId, ...at, harness: type, model: run.model },
    );
    const translator = CLI_HARNESS_ADAPTERS[type].translator();
    const raw = new RawEventLog(MAX_RAW_LOG_BYTES);
    const lines = new JsonLines((event, line) => {
      raw.add(line);
      if (event) transcript.add(translator.line(event));
    });
    return { transcript, raw, lines };
  };

  /** The invocation's raw event stream as an artifact (once per invocation: its key says which). */
  const recordRawLog = async (at: InvocationAt, raw: RawEventLog) => {
    if (!raw.bytes) return;
    const name = `${type}-t${at.turn}-s${at.step}-a${at.attempt}.jsonl`;
    await recordFileArtifact(dataSource, blobs, {
      runId,
      toolCallKey: `harness-log-t${at.turn}-s${at.step}-i${at.attempt}`,
      filepath: `.agent-runs/harness/${name}`,
      filename: name,
      mimeType: 'application/x-ndjson',
      description: `The raw event stream of ${run.title}${run.version ? ` ${run.version}` : ''}, turn ${at.turn}${raw.cut ? ' (cut at 16 MiB)' : ''}`,
      bytes: raw.contents(),
    });
  };

  /** What the invocation reported it used, into the run's sums (once per invocation: its key says which). */
  const recordUsage = async (at: InvocationAt, report: InvocationReport) => {
    if (!Object.keys(report.usage).length && !Object.keys(report.toolCalls).length) return;
    await addHarnessUsage(dataSource.manager, runId, {
      invocation: `t${at.turn}-s${at.step}-i${at.attempt}`,
      usage: report.usage,
      toolCalls: report.toolCalls,
      costUsd: report.costUsd,
      executionId: at.turn,
    });
  };

  /**
   * Records what invocations whose worker died left on disk (invocation-output.ts), under their
   * own keys: what they recorded themselves is not recorded twice, what they printed unread is
   * added, and their usage is counted if they had not counted it. Each file goes once it is recorded.
   */
  const recordLeftOvers = async () => {
    for (const output of await leftOverOutputs(deps.workspaceRoot, runId)) {
      const { transcript, raw, lines } = recorder(output);
      // Small chunks, each written before the next is read: the transcript never has more entries
      // waiting than it takes, so it drops none and the keys come out as the live invocation's did.
      const stream = createReadStream(output.path, { highWaterMark: 1024, end: MAX_FOLLOWED_BYTES - 1 });
      for await (const chunk of stream) {
        lines.write(chunk as Buffer);
        await transcript.flushed();
      }
      lines.end();
      await transcript.flushed();
      await recordRawLog(output, raw);
      await recordUsage(output, transcript.report);
      await removeInvocationOutput(output);
    }
  };

  return { recorder, recordRawLog, recordUsage, recordLeftOvers };
}
