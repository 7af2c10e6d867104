/** A CLI's raw event stream, kept line by line up to a cap (the rest is cut), for the run's artifact. */
export class RawEventLog {
  private readonly chunks: Buffer[] = [];
  bytes = 0;
  cut = false;

  constructor(private readonly maxBytes: number) {}

  add(line: string): void {
    if (this.bytes >= this.maxBytes) {
      this.cut = true;
      return;
    }
    const bytes = Buffer.from(`${line}\n`, 'utf8');
    this.chunks.push(bytes);
    this.bytes += bytes.length;
  }

  contents(): Buffer {
    return Buffer.concat(this.chunks);
  }
}
