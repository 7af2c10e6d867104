package main

// Some writes make no fanotify event: Linux AIO, writes through a shared mapping, splice before
// Linux 6.5. A file the run's processes hold open for writing, or map shared and writable, may
// have changed without one, so a checkpoint from the watcher's paths looks at it again.

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// inodesOpenForWriting is the inodes on dev that processes pids hold open for writing or map
// shared and writable; false when a process's files cannot be read (the checkpoint then cannot
// vouch for a delta). A process gone meanwhile holds nothing.
func inodesOpenForWriting(pids []int, dev uint64) ([]uint64, bool) {
	var inos []uint64
	for _, pid := range pids {
		fds, ok := writableFiles(pid, dev)
		if !ok {
			return nil, false
		}
		maps, ok := sharedWritableMaps(pid, dev)
		if !ok {
			return nil, false
		}
		inos = append(append(inos, fds...), maps...)
	}
	return inos, true
}

func writableFiles(pid int, dev uint64) ([]uint64, bool) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	names, err := readDirNamesAt(dir)
	if err != nil {
		return nil, gone(err)
	}
	var inos []uint64
	for _, name := range names {
		var st syscall.Stat_t
		if syscall.Stat(dir+"/"+name, &st) != nil || st.Dev != dev || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			continue
		}
		if writable, ok := openForWriting(pid, name); !ok || writable {
			inos = append(inos, st.Ino)
		}
	}
	return inos, true
}

// openForWriting reads the descriptor's flags from fdinfo; not ok when they cannot be read.
func openForWriting(pid int, fd string) (writable, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd))
	if err != nil {
		return false, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if value, found := strings.CutPrefix(line, "flags:"); found {
			flags, err := strconv.ParseUint(strings.TrimSpace(value), 8, 64)
			return err == nil && flags&syscall.O_ACCMODE != syscall.O_RDONLY, err == nil
		}
	}
	return false, false
}

// sharedWritableMaps: the inodes of the process's mappings on dev that are shared and writable
// (`rw?s` in /proc/<pid>/maps).
func sharedWritableMaps(pid int, dev uint64) ([]uint64, bool) {
	file, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, gone(err)
	}
	defer file.Close()
	want := fmt.Sprintf("%02x:%02x", devMajor(dev), devMinor(dev))
	var inos []uint64
	lines := bufio.NewScanner(file)
	lines.Buffer(make([]byte, 64*1024), 1<<20)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) < 5 || fields[3] != want || len(fields[1]) != 4 || fields[1][1] != 'w' || fields[1][3] != 's' {
			continue
		}
		if ino, err := strconv.ParseUint(fields[4], 10, 64); err == nil && ino != 0 {
			inos = append(inos, ino)
		}
	}
	return inos, lines.Err() == nil
}

// gone: a process that exited meanwhile holds nothing; any other error leaves the files unknown.
func gone(err error) bool {
	return os.IsNotExist(err) || err == syscall.ESRCH
}

func readDirNamesAt(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// The kernel's encoding of a device number (new_encode_dev).
func devMajor(dev uint64) uint64 { return (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff) }
func devMinor(dev uint64) uint64 { return dev&0xff | (dev>>12)&^uint64(0xff) }
