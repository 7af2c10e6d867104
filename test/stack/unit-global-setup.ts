import { enterTestTempRoot } from './temp-root';

/** The unit tests' temporary files go to the run's own directory too (temp-root.ts). */
export default function unitGlobalSetup(): void {
  enterTestTempRoot();
}
