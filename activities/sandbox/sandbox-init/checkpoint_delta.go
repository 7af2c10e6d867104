package main

// A checkpoint with the watcher's hand-over (watch.go): instead of walking everything, it starts
// from the last index and looks again only at the paths that changed since, as the walk would
// (checkpoint.go's visit and walkDir, the same guarantees): the path's directories are opened
// one by one from its root with O_NOFOLLOW and must be on the root's filesystem; a path that
// cannot be reached so is gone, with everything the index had under it. A path that may have come
// with a tree under it (made, renamed, a directory that is not the one indexed) is walked whole.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type watchReply struct {
	full  bool
	gen   string
	epoch uint64
	roots string
	paths map[string]bool
	inos  map[uint64]bool
}

// askWatcher asks the watcher on socket for what changed since the index's epoch; nil when there
// is no answer to trust (no watcher, a watcher that failed): the checkpoint then walks everything.
func askWatcher(socket string, state watchState) *watchReply {
	conn, err := net.DialTimeout("unix", socket, 2*time.Second)
	if err != nil {
		return nil
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	gen := state.gen
	if gen == "" {
		gen = "-"
	}
	if _, err := fmt.Fprintf(conn, "since %s %d\n", gen, state.epoch); err != nil {
		return nil
	}
	reply, err := readWatchReply(bufio.NewReaderSize(conn, 64*1024))
	if err != nil {
		return nil
	}
	return reply
}

func readWatchReply(in *bufio.Reader) (*watchReply, error) {
	head, err := in.ReadString('\n')
	if err != nil {
		return nil, err
	}
	roots, err := in.ReadString('\n')
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(head)
	reply := &watchReply{paths: map[string]bool{}, inos: map[uint64]bool{}}
	if len(fields) != 3 || (fields[0] != "full" && fields[0] != "delta") || !strings.HasPrefix(roots, "roots ") {
		return nil, fmt.Errorf("bad reply %q", head)
	}
	reply.full, reply.gen = fields[0] == "full", fields[1]
	if reply.epoch, err = strconv.ParseUint(fields[2], 10, 64); err != nil {
		return nil, err
	}
	reply.roots = strings.TrimSuffix(strings.TrimPrefix(roots, "roots "), "\n")
	for {
		record, err := in.ReadString(0)
		if err != nil {
			// Cut short: the end marker never came.
			return nil, io.ErrUnexpectedEOF
		}
		record = record[:len(record)-1]
		switch {
		case record == ".":
			return reply, nil
		case strings.HasPrefix(record, "t"), strings.HasPrefix(record, "p"):
			path := record[1:]
			reply.paths[path] = reply.paths[path] || record[0] == 't'
		case strings.HasPrefix(record, "i"):
			ino, err := strconv.ParseUint(record[1:], 10, 64)
			if err != nil {
				return nil, err
			}
			reply.inos[ino] = true
		default:
			return nil, fmt.Errorf("bad record %q", record)
		}
	}
}

// rootIds is the roots as the watcher names them: name=dev:ino, or name=- for one not there.
func rootIds(dirs []rootDir) string {
	var ids []string
	for _, root := range dirs {
		if root.fd < 0 {
			ids = append(ids, root.name+"=-")
		} else {
			ids = append(ids, fmt.Sprintf("%s=%d:%d", root.name, root.st.Dev, root.st.Ino))
		}
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}

// walkDelta makes the next index from the last one and the paths that changed; false when it
// cannot (a path it cannot make sense of): the caller walks everything instead.
func (w *walker) walkDelta(dirs []rootDir, reply *watchReply) bool {
	roots := map[string]rootDir{}
	for _, root := range dirs {
		roots[root.name] = root
	}
	dirty := w.dirtyPaths(reply)
	paths := make([]string, 0, len(dirty))
	for path := range dirty {
		name, _, _ := strings.Cut(path, "/")
		if _, ok := roots[name]; !ok || !validRelative(path) {
			return false
		}
		paths = append(paths, path)
	}
	// A directory sorts before everything under it: what it was walked with is skipped.
	sort.Strings(paths)
	w.delta = true
	w.next = make(map[string]treeStat, len(paths))
	walked := map[string]bool{}
	for _, path := range paths {
		if w.excludedPath(path) || underAny(path, walked) {
			continue
		}
		if w.examine(roots[path[:strings.IndexByte(path+"/", '/')]], path, dirty[path]) {
			walked[path] = true
		}
	}
	w.summarize()
	w.summary.Delta = true
	return true
}

// dirtyPaths: the watcher's paths, the other names of the inodes it saw change (hard links the
// last index has), and what the last checkpoint left to look at again.
func (w *walker) dirtyPaths(reply *watchReply) map[string]bool {
	dirty := make(map[string]bool, len(reply.paths))
	for path, tree := range reply.paths {
		dirty[path] = tree
	}
	for _, e := range w.base.entries {
		if e.st.Kind == kindRecheck {
			dirty[e.path] = true
		} else if _, ok := dirty[e.path]; !ok && reply.inos[e.st.Ino] {
			dirty[e.path] = false
		}
	}
	return dirty
}

// examine brings the index's entry for path (and, for a tree, everything under it) to what is
// there now; true when nothing under path needs looking at any more.
func (w *walker) examine(root rootDir, path string, tree bool) bool {
	if root.fd < 0 {
		w.forget(path)
		return true
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(path, root.name), "/")
	if rest == "" {
		return w.examineDir(path, root.st, root.fd, -1, "", tree)
	}
	parent, name, ok := openParent(root, rest)
	if !ok {
		w.forget(path)
		return true
	}
	if parent != root.fd {
		defer syscall.Close(parent)
	}
	var st syscall.Stat_t
	if err := fstatat(parent, name, &st); err != nil || st.Dev != root.st.Dev {
		w.forget(path)
		return true
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return w.examineDir(path, st, -1, parent, name, tree)
	case syscall.S_IFREG, syscall.S_IFLNK:
		w.forgetBelow(path)
		w.visit(path, st, parent)
	default:
		w.forget(path)
	}
	return true
}

// examineDir looks at a directory, and walks it when it may have come with a tree under it.
// fd is the directory when open already (a root); otherwise it is name in parent.
func (w *walker) examineDir(path string, st syscall.Stat_t, fd, parent int, name string, tree bool) bool {
	old, had := w.base.get(path)
	if !tree && had && old.Kind == 'd' && old.Ino == st.Ino {
		w.visit(path, st, parent)
		return false
	}
	w.forgetBelow(path)
	if fd < 0 {
		child, err := syscall.Openat(parent, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		var opened syscall.Stat_t
		if err == nil && (syscall.Fstat(child, &opened) != nil || opened.Ino != st.Ino || opened.Dev != st.Dev) {
			syscall.Close(child)
			err = syscall.ESTALE
		}
		if err != nil {
			w.summary.Skipped++
			w.recheck(path)
			return true
		}
		defer syscall.Close(child)
		fd = child
	}
	w.visit(path, st, parent)
	w.walkDir(fd, path, st.Dev)
	return true
}

// openParent opens the directory that holds rest (a path below the root) the way the walk would
// reach it: each directory by name from the one above, following nothing, on the root's filesystem.
func openParent(root rootDir, rest string) (int, string, bool) {
	parts := strings.Split(rest, "/")
	fd := root.fd
	for _, part := range parts[:len(parts)-1] {
		next, err := syscall.Openat(fd, part, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if fd != root.fd {
			syscall.Close(fd)
		}
		if err != nil {
			return -1, "", false
		}
		var st syscall.Stat_t
		if syscall.Fstat(next, &st) != nil || st.Dev != root.st.Dev {
			syscall.Close(next)
			return -1, "", false
		}
		fd = next
	}
	return fd, parts[len(parts)-1], true
}

// excludedPath: the walk leaves the path out (it or a directory above it is excluded).
func (w *walker) excludedPath(path string) bool {
	parts := strings.Split(path, "/")
	for i := 1; i < len(parts); i++ {
		if w.excludedNames[parts[i]] || w.excluded[strings.Join(parts[:i+1], "/")] {
			return true
		}
	}
	return false
}

func underAny(path string, dirs map[string]bool) bool {
	for at := strings.LastIndexByte(path, '/'); at > 0; at = strings.LastIndexByte(path[:at], '/') {
		if dirs[path[:at]] {
			return true
		}
	}
	return false
}

// forget: the path is gone, with everything under it.
func (w *walker) forget(path string) {
	w.next[path] = treeStat{Kind: kindGone}
	w.forgetBelow(path)
}

// forgetBelow drops what the last index had under path (only a directory had anything there).
func (w *walker) forgetBelow(path string) {
	if old, ok := w.base.get(path); !ok || (old.Kind != 'd' && old.Kind != kindRecheck) {
		return
	}
	for _, e := range w.base.below(path) {
		w.next[e.path] = treeStat{Kind: kindGone}
	}
}

// summarize counts the whole tree from the last index and the changes, as a walk counts what it visits.
func (w *walker) summarize() {
	count := func(st treeStat, by int) {
		switch st.Kind {
		case 'd':
			w.summary.Dirs += by
		case 'f':
			w.summary.Files += by
			w.summary.Bytes += int64(by) * st.Size
		case 'l':
			w.summary.Symlinks += by
		}
	}
	w.summary.Files, w.summary.Dirs, w.summary.Symlinks, w.summary.Bytes = 0, 0, 0, 0
	for _, e := range w.base.entries {
		count(e.st, 1)
	}
	for path, st := range w.next {
		if old, ok := w.base.get(path); ok {
			count(old, -1)
		}
		count(st, 1)
	}
}
