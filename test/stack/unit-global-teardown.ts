import { removeTestTempRoot } from './temp-root';

export default function unitGlobalTeardown(): void {
  removeTestTempRoot();
}
