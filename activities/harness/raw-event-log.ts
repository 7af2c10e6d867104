/** A CLI's raw event stream, kept line by line up to a cap (the rest is cut), for the run's artifact. */
export class RawEventLog {
  private readonly chunks: Buffer[] = [];
  bytes = 0;
  cut = false;

  constructor(private readonly maxBytes: number) {}

  add(line: string): void {
    const bytes = Buffer.from(`${line}\n`, 'utf8');
    if (this.bytes + bytes.length > this.maxBytes) {
      this.cut = true;
      return;
    }
    this.chunks.push(bytes);
    this.bytes += bytes.length;
  }

  contents(): Buffer {
    return Buffer.concat(this.chunks);
  }
}
