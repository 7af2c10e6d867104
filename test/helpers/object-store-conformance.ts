import { text } from 'node:stream/consumers';
import { contentKey, type ObjectStore } from '../../infra/object-store/object-store';

/** What every ObjectStore backend must do: the same tests for the directory and for S3. */
export function objectStoreConformance(name: string, make: () => Promise<ObjectStore>): void {
  describe(`${name} object store`, () => {
    let store: ObjectStore;
    beforeAll(async () => {
      store = await make();
    });

    test('put, get, has, stream, and a put again of the same key', async () => {
      const body = Buffer.from(`hello ${name} ${Math.random()}`);
      const key = contentKey(body);
      expect(await store.has(key)).toBe(false);
      expect(await store.get(key)).toBeUndefined();
      expect(await store.getStream(key)).toBeUndefined();
      await store.put(key, body);
      await store.put(key, body);
      expect(await store.has(key)).toBe(true);
      expect(await store.get(key)).toEqual(body);
      expect(await text((await store.getStream(key))!)).toBe(body.toString());
    });

    test('list by prefix in key order, and delete (missing keys are no error)', async () => {
      const prefix = `conformance/${Math.random().toString(36).slice(2)}`;
      const keys = [`${prefix}/b`, `${prefix}/a/2`, `${prefix}/a/1`, `${prefix}/a-b`, `${prefix}-not/x`];
      for (const key of keys) await store.put(key, Buffer.from(key));
      const listed: string[] = [];
      for await (const object of store.list(`${prefix}/`)) {
        expect(object.size).toBe(Buffer.byteLength(object.key));
        expect(Number.isFinite(object.modifiedAt.getTime())).toBe(true);
        listed.push(object.key);
      }
      expect(listed).toEqual([`${prefix}/a-b`, `${prefix}/a/1`, `${prefix}/a/2`, `${prefix}/b`]);
      await store.delete([...keys, `${prefix}/never-written`]);
      for (const key of keys) expect(await store.has(key)).toBe(false);
    });

    test('more objects than one listing page or one delete request takes', async () => {
      const prefix = `conformance/many-${Math.random().toString(36).slice(2)}`;
      const keys = Array.from({ length: 1001 }, (_, i) => `${prefix}/${String(i).padStart(4, '0')}`);
      for (let i = 0; i < keys.length; i += 50) {
        await Promise.all(keys.slice(i, i + 50).map((key) => store.put(key, Buffer.from('x'))));
      }
      const listed: string[] = [];
      for await (const object of store.list(`${prefix}/`)) listed.push(object.key);
      expect(listed).toEqual(keys);
      await store.delete(keys);
      const left: string[] = [];
      for await (const object of store.list(`${prefix}/`)) left.push(object.key);
      expect(left).toEqual([]);
    });

    test('a large object round-trips whole', async () => {
      const body = Buffer.alloc(12 * 1024 * 1024 + 7, 0x5a);
      const key = `conformance/large-${Math.random().toString(36).slice(2)}`;
      await store.put(key, body);
      expect((await store.get(key))!.equals(body)).toBe(true);
      await store.delete([key]);
    });

    test('keys that could leave the store are refused', async () => {
      for (const bad of ['../x', 'a/../../x', '/abs', 'a//b', ''])
        await expect(store.put(bad, Buffer.from('x'))).rejects.toThrow('not an object key');
    });
  });
}
