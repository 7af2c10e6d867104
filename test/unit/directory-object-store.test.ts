import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DirectoryObjectStore } from '../../infra/object-store/directory-store';
import { objectStoreConformance } from '../helpers/object-store-conformance';

objectStoreConformance(
  'directory',
  async () => new DirectoryObjectStore(mkdtempSync(path.join(os.tmpdir(), 'agent-runs-objects-'))),
);
