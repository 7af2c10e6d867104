const MIB = 1024 * 1024;
const BLOCK_BYTES = 4096;
/** One inode per 8 KiB: a workspace of small files (node_modules) runs out of space before inodes. */
const BYTES_PER_INODE = 8192;
const INODE_BYTES = 256;
/**
 * Blocks only root may use: when a run has filled its filesystem, the worker (root) can still
 * write what it needs there to end the step cleanly (a sandbox's environment file, a socket).
 */
const ROOT_RESERVE_BYTES = 2 * MIB;
/** Above the limit, so that a filled filesystem reads as at the limit (a failed write may leave a few blocks). */
export const FILESYSTEM_MARGIN_BYTES = MIB;
/** ext4 keeps 2 % of the blocks, at most 4,096 of them, from ordinary writes (its delayed-allocation reserve). */
const KERNEL_RESERVE_SHARE = 0.02;
const KERNEL_RESERVE_MAX_BYTES = 4096 * BLOCK_BYTES;

/** How a run's filesystem image is made for a disk limit (run-disks.ts). */
export interface RunDiskLayout {
  /** The image file's size: the most the run's files can take of the host's disk. */
  imageBytes: number;
  /** Bytes the run's processes can write before a write fails: at least the limit. */
  writableBytes: number;
  /** mkfs.ext4's options, without the image's path. */
  mkfsArgs: string[];
}

/**
 * The ext4 image of a run limited to `maxBytes`: sized so the run can write the limit and a
 * little more (so a full filesystem reads as reached), plus the filesystem's own metadata
 * (inode tables, bitmaps, journal) and reserves. Sparse: the host's disk holds only what is used.
 */
export function runDiskLayout(maxBytes: number): RunDiskLayout {
  const journalMib = maxBytes >= 1024 * MIB ? 32 : maxBytes >= 32 * MIB ? 4 : 0;
  const writableBytes = maxBytes + FILESYSTEM_MARGIN_BYTES;
  const data = writableBytes + ROOT_RESERVE_BYTES + journalMib * MIB;
  // Inode tables, and a thousandth for bitmaps, group descriptors and directories' first blocks.
  const withMetadata = data / (1 - INODE_BYTES / BYTES_PER_INODE - 0.001);
  const kernelReserve = Math.min(
    (withMetadata / (1 - KERNEL_RESERVE_SHARE)) * KERNEL_RESERVE_SHARE,
    KERNEL_RESERVE_MAX_BYTES,
  );
  const imageBytes = roundUp(withMetadata + kernelReserve + MIB, MIB);
  const reservedPercent = ((ROOT_RESERVE_BYTES / imageBytes) * 100).toFixed(4);
  return {
    imageBytes,
    writableBytes,
    mkfsArgs: [
      '-q',
      '-F',
      '-t',
      'ext4',
      '-b',
      String(BLOCK_BYTES),
      '-i',
      String(BYTES_PER_INODE),
      '-I',
      String(INODE_BYTES),
      '-m',
      reservedPercent,
      ...(journalMib ? ['-J', `size=${journalMib}`] : ['-O', '^has_journal']),
      '-O',
      '^resize_inode',
      // The image is a new sparse file: it reads as zeros, so nothing needs zeroing (no writes,
      // no host disk) now or later in the kernel's background thread.
      '-E',
      'lazy_itable_init=0,lazy_journal_init=1',
    ],
  };
}

function roundUp(n: number, unit: number): number {
  return Math.ceil(n / unit) * unit;
}
