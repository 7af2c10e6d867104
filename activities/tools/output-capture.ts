/** Keeps the first and last halves of a stream beyond a size, with a marker between. */
export class OutputCapture {
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer = Buffer.alloc(0);
  total = 0;
  constructor(private readonly keepBytes: number) {}

  add(chunk: Buffer): void {
    this.total += chunk.length;
    const half = Math.floor(this.keepBytes / 2);
    if (this.headBytes < half) {
      const take = chunk.subarray(0, half - this.headBytes);
      this.head.push(take);
      this.headBytes += take.length;
      chunk = chunk.subarray(take.length);
    }
    if (chunk.length) this.tail = Buffer.concat([this.tail, chunk]).subarray(-half);
  }

  text(): string {
    const head = Buffer.concat(this.head).toString('utf8');
    const omitted = this.total - this.headBytes - this.tail.length;
    if (omitted <= 0) return head + this.tail.toString('utf8');
    return `${head}\n[... ${omitted} bytes of output omitted ...]\n${this.tail.toString('utf8')}`;
  }
}

/** Caps text for the model with a marker that says how much was cut. */
export function capText(text: string, limitBytes: number): string {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= limitBytes) return text;
  const capture = new OutputCapture(limitBytes);
  capture.add(Buffer.from(text, 'utf8'));
  return capture.text();
}
