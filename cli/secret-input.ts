/**
 * Reading a secret's value: never from the command line (where `ps` and the shell's history
 * would keep it), but from a prompt that does not echo it, or from a pipe or a file.
 */

/** A pipe or a file ends with the newline `echo` or an editor adds: one is dropped, nothing else. */
export function withoutTrailingNewline(text: string): string {
  return text.replace(/\r?\n$/, '');
}

/** Ctrl-C at the prompt. */
export class SecretInputCancelled extends Error {
  override readonly name = 'SecretInputCancelled';
  constructor() {
    super('Cancelled at the prompt; nothing was stored.');
  }
}

/** The value, from a terminal (prompted on `output`, not echoed) or all of stdin otherwise. */
export async function readSecretValue(
  prompt: string,
  input: NodeJS.ReadStream = process.stdin,
  output: NodeJS.WritableStream = process.stderr,
): Promise<string> {
  if (input.isTTY) return readHidden(prompt, input, output);
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return withoutTrailingNewline(Buffer.concat(chunks).toString('utf8'));
}

/**
 * One line typed at the terminal in raw mode, so the terminal shows nothing of it: Enter (or
 * Ctrl-D) ends it, Backspace takes back a character, Ctrl-C cancels. The terminal's mode is
 * restored whatever happens.
 */
function readHidden(prompt: string, input: NodeJS.ReadStream, output: NodeJS.WritableStream): Promise<string> {
  const wasRaw = input.isRaw;
  // Raw before the prompt shows: nothing typed after it is ever echoed.
  input.setRawMode(true);
  input.setEncoding('utf8');
  output.write(prompt);
  return new Promise<string>((resolve, reject) => {
    let value = '';
    const finish = (err?: Error) => {
      input.off('data', onData);
      input.setRawMode(wasRaw);
      input.pause();
      output.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return finish();
        if (ch === '\u0003') return finish(new SecretInputCancelled());
        if (ch === '\u007f' || ch === '\b') value = [...value].slice(0, -1).join('');
        else value += ch;
      }
    };
    input.on('data', onData);
    input.resume();
  });
}
