package main

import (
	"fmt"
	"os"
	"syscall"
)

// cachedIndex is the index the watcher's last checkpoint saved, as read: the next checkpoint
// uses it instead of reading the file again while the file is still that one.
type cachedIndex struct {
	file  string
	id    fileIdentity
	index *sortedIndex
	state watchState
}

type fileIdentity struct {
	dev, ino uint64
	size     int64
	mtime    syscall.Timespec
}

func identityOf(file string) (fileIdentity, bool) {
	var st syscall.Stat_t
	if err := syscall.Lstat(file, &st); err != nil {
		return fileIdentity{}, false
	}
	return fileIdentity{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim}, true
}

// readIndex is the cached index when the file is the one it was read from, else the file's.
func (w *watcher) readIndex(file string) (*sortedIndex, watchState) {
	if c := w.last; c != nil && c.file == file {
		if id, ok := identityOf(file); ok && id == c.id {
			return c.index, c.state
		}
	}
	return readIndex(file)
}

// commit saves the index of a recorded checkpoint and keeps it for the next one.
func (w *watcher) commit(file string, next *indexWriter) {
	w.last = nil
	if err := next.saveFile(file); err != nil {
		fmt.Fprintf(os.Stderr, "watch: saving the index: %v\n", err)
		return
	}
	if id, ok := identityOf(file); ok {
		parsed, state := parseIndex(next.out)
		w.last = &cachedIndex{file: file, id: id, index: parsed, state: state}
	}
}
