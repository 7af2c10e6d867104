import { sanitiseFileName, uniqueFileNames } from '../../core/attachments';

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
