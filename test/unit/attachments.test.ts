import { randomBytes } from 'node:crypto';
import { sanitiseFileName, uniqueFileNames } from '../../core/attachments';
import { base64DecodedBytes, isBase64 } from '../../core/schemas/attachment-schemas';

test.each([
  ['report.pdf', 'report.pdf'],
  ['../../etc/passwd', 'passwd'],
  ['C:\\Users\\me\\notes.txt', 'notes.txt'],
  ['dir/', 'dir'],
  ['.env', 'env'],
  ['..', 'attachment'],
  [' . .hidden ', 'hidden'],
  ['', 'attachment'],
  ['a\u0000b\nc$(rm -rf *).sh', 'a_b_c_(rm -rf _).sh'],
  ['rapport d’été.txt', 'rapport d_été.txt'],
  ['e\u0301te.md', 'éte.md'],
  ['数据.csv', '数据.csv'],
])('%j is stored as %j', (requested, stored) => {
  expect(sanitiseFileName(requested)).toBe(stored);
});

test('a long name is cut to at most 200 bytes of UTF-8', () => {
  expect(sanitiseFileName('a'.repeat(300))).toBe('a'.repeat(200));
  const cut = sanitiseFileName('é'.repeat(150));
  expect(cut).toBe('é'.repeat(100));
  expect(Buffer.byteLength(cut)).toBe(200);
});

/** No unpaired surrogate: with the `u` flag, a surrogate matches only when it is not half of a pair. */
const wellFormed = (text: string) => !/\p{Cs}/u.test(text);

// A letter outside the Basic Multilingual Plane is 4 bytes and two UTF-16 units: it goes whole or not at all.
test('a long name is cut between characters, never inside one', () => {
  for (let ascii = 190; ascii <= 200; ascii++) {
    const cut = sanitiseFileName('a'.repeat(ascii) + '𠀀'.repeat(5));
    expect([ascii, wellFormed(cut), Buffer.byteLength(cut) <= 200]).toEqual([ascii, true, true]);
    expect(cut.startsWith('a'.repeat(Math.min(ascii, 200)))).toBe(true);
  }
});

test('names are made unique in request order, before the extension', () => {
  expect(uniqueFileNames(['a.txt', 'a.txt', 'dir/a.txt', 'a-2.txt', 'README', 'README', '.txt', 'txt'])).toEqual([
    'a.txt',
    'a-2.txt',
    'a-3.txt',
    'a-2-2.txt',
    'README',
    'README-2',
    'txt',
    'txt-2',
  ]);
});

describe('attachment data', () => {
  /** Standard padded base64: a copy of BASE64_PATTERN, which the OpenAPI document states. */
  const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

  test('isBase64 takes what Buffer writes, and base64DecodedBytes is its length', () => {
    for (let size = 0; size < 64; size++) {
      const data = randomBytes(size).toString('base64');
      expect([data, isBase64(data), base64DecodedBytes(data)]).toEqual([data, true, size]);
    }
  });

  test('isBase64 takes exactly what the documented pattern takes', () => {
    // Every string of up to 8 characters over a small alphabet that has the awkward cases in it.
    const alphabet = ['A', '/', '=', '-', '\n'];
    let strings = [''];
    const disagreements: string[] = [];
    for (let length = 1; length <= 8; length++) {
      strings = strings.flatMap((s) => alphabet.map((c) => s + c));
      for (const data of strings) if (isBase64(data) !== BASE64.test(data)) disagreements.push(data);
    }
    expect(disagreements).toEqual([]);
  });
});
