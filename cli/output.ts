import { createSpinner, type Spinner } from 'nanospinner';
import { styler } from './terminal-text';

/**
 * Where the CLI writes. With `--json`, stdout carries only JSON (one document, or one value per
 * line when following) and everything for people goes to stderr; without it, stdout carries the
 * command's result (a run id, a table, the transcript) and notes go to stderr.
 */
export class Output {
  readonly style: ReturnType<typeof styler>;
  /** Whether human output is coloured. */
  readonly color: boolean;
  private spinner: Spinner | undefined;
  private spinning = false;

  constructor(
    readonly json: boolean,
    color: boolean,
    private readonly spinnerAllowed: boolean,
    private readonly stdout: NodeJS.WritableStream = process.stdout,
    private readonly stderr: NodeJS.WritableStream = process.stderr,
  ) {
    this.color = color && !json;
    this.style = styler(this.color);
  }

  /** The command's result for people (never in `--json` mode). */
  text(text: string): void {
    if (this.json || !text) return;
    this.clearSpinner();
    this.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** The command's result as one JSON document. */
  document(value: unknown): void {
    this.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** One JSON value on a line of its own (a followed event). */
  jsonLine(value: unknown): void {
    this.stdout.write(`${JSON.stringify(value)}\n`);
  }

  /** A message for people, on stderr. */
  note(text: string): void {
    this.clearSpinner();
    this.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** Shows (or retitles) the spinner, on an interactive terminal only. */
  working(text: string): void {
    if (!this.spinnerAllowed || this.json) return;
    this.spinner ??= createSpinner(text, { stream: process.stderr });
    if (this.spinning) this.spinner.update({ text });
    else this.spinner.start({ text });
    this.spinning = true;
  }

  /** Takes the spinner away. */
  idle(): void {
    if (!this.spinning) return;
    this.spinner?.stop();
    this.spinning = false;
  }

  private clearSpinner(): void {
    if (this.spinning) this.spinner?.clear();
  }

  /** Waits until everything written to stdout is handed to the system, before the process exits. */
  async flush(): Promise<void> {
    this.idle();
    await new Promise<void>((resolve) => this.stdout.write('', () => resolve()));
  }
}
