package main

// `sandbox-init -checkpoint` is another program in this binary, run on the host side by the
// worker (as root): it walks a run's files (its workspace and home, on the run's own filesystem)
// and writes to standard output a tar stream of every entry that changed since the last
// checkpoint, judged by the stat index of that checkpoint (as git's index judges a work tree:
// type, mode, size, inode, modification and change times), followed by `.agent-runs/deleted`
// (the paths gone since, NUL-separated) and `.agent-runs/summary` (JSON counts of the whole
// tree). The new index goes to `<index>.next`; the worker renames it into place once the
// checkpoint is recorded, so a checkpoint that is not recorded is taken again next time.
//
// The walk never follows a symlink and never leaves the filesystem it starts on: every directory
// is opened relative to its parent's descriptor with O_NOFOLLOW, every file likewise, and
// checked to be what was listed. A run that swaps a directory for a symlink while it is walked
// (its background processes may still run) makes the walk skip that entry, never read through it.

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// treeStat is what decides whether an entry changed: a file whose stat is the same has the
// same bytes (a write changes the change time, which no process can set).
type treeStat struct {
	Kind  byte // 'd', 'f', 'l'
	Mode  uint32
	Size  int64
	Ino   uint64
	Mtime int64
	Ctime int64
}

type walkSummary struct {
	Files    int   `json:"files"`
	Dirs     int   `json:"dirs"`
	Symlinks int   `json:"symlinks"`
	Bytes    int64 `json:"bytes"`
	Changed  int   `json:"changed"`
	Deleted  int   `json:"deleted"`
	Skipped  int   `json:"skipped"`
	// Only the paths the watcher saw change were looked at (checkpoint_delta.go), not every file.
	Delta bool `json:"delta"`
	// The index was another checkpoint's than the parent's: every file is listed, as with no index.
	Fresh bool `json:"fresh"`
}

type walker struct {
	// Only the index is wanted (after a restore): nothing is read or written out.
	indexOnly bool
	// The last checkpoint's index as read, and (for a walk of everything) as a map.
	base     *sortedIndex
	previous map[string]treeStat
	// A walk's whole new index; a delta's changes to base only (kindGone: no longer there).
	next  map[string]treeStat
	delta bool
	// The index's first entry but one: the watcher's state.
	watch    *indexEntry
	excluded map[string]bool
	// Names left out wherever they are (the service's own caches in a repository's .git).
	excludedNames map[string]bool
	out           *tar.Writer
	summary       walkSummary
}

// Every so many checkpoints in a row from the watcher's paths, one walks everything all the same:
// what no event tells (a write through a shared mapping that is still mapped) is found then.
const walkEvery = 32

// checkpointRequest is what a checkpoint is told: its roots (name=/path,...), the index of the
// last one, what to leave out, and whether only the index is wanted.
type checkpointRequest struct {
	Roots        string `json:"roots"`
	Index        string `json:"index"`
	Exclude      string `json:"exclude"`
	ExcludeNames string `json:"excludeNames"`
	IndexOnly    bool   `json:"indexOnly"`
	// The checkpoint this one becomes once recorded, written into the next index (by a process;
	// the watcher is told at `commit`); and the last recorded one, whose index the walk starts
	// from: an index of another checkpoint (one recorded without its index saved) is no base, and
	// the walk then lists every file.
	Checkpoint string `json:"checkpoint"`
	Parent     string `json:"parent"`
	// The run's processes (its cgroup's), whose files open for writing a delta looks at again
	// (open_writers.go); a delta only when they are known.
	Pids      []int `json:"pids"`
	PidsKnown bool  `json:"pidsKnown"`
}

// checkpointMain: -checkpoint -root name=/path[,name=/path] -index file [-exclude a/b,c] [-exclude-name n,m] [-index-only] [-socket watcher] [-id checkpoint] [-parent checkpoint]
func checkpointMain(req checkpointRequest, socket string) {
	from := checkpointSources{readIndex: readIndex, ask: func(watchState) *watchReply { return nil }}
	if socket != "" {
		from.ask = func(state watchState) *watchReply { return askWatcher(socket, state) }
	}
	buffered := bufio.NewWriterSize(os.Stdout, 256*1024)
	walked, err := runCheckpoint(req, buffered, from)
	if err != nil {
		fail(125, "%v", err)
	}
	if err := buffered.Flush(); err != nil {
		fail(125, "checkpoint: %v", err)
	}
	// The worker renames `<index>.next` into place once it has recorded the checkpoint.
	file := req.Index + ".next"
	if req.IndexOnly {
		file = req.Index
	}
	if err := walked.nextIndex(req.Checkpoint).saveFile(file); err != nil {
		fail(125, "checkpoint: %v", err)
	}
}

// checkpointError is how a checkpoint stops short: runCheckpoint returns it (the watcher serves
// checkpoints in its own process, which must go on).
type checkpointError struct{ message string }

func checkpointFail(format string, args ...any) {
	panic(checkpointError{fmt.Sprintf(format, args...)})
}

// checkpointSources is where a checkpoint gets the last index and the watcher's hand-over for
// its state (nil: walk everything).
type checkpointSources struct {
	readIndex func(file string) (*sortedIndex, watchState)
	ask       func(watchState) *watchReply
}

// runCheckpoint writes the tar stream of what changed to out (nothing when only the index is
// wanted) and returns the walk, whose next index the caller saves.
func runCheckpoint(req checkpointRequest, out io.Writer, from checkpointSources) (walked *walker, err error) {
	defer func() {
		if r := recover(); r != nil {
			failure, ok := r.(checkpointError)
			if !ok {
				panic(r)
			}
			err = errors.New(failure.message)
		}
	}()
	base, state := from.readIndex(req.Index)
	fresh := state.checkpoint != "" && state.checkpoint != req.Parent
	if req.IndexOnly || fresh {
		base, state = &sortedIndex{}, watchState{}
	}
	w := &walker{base: base, next: map[string]treeStat{}, excluded: setOf(req.Exclude),
		excludedNames: setOf(req.ExcludeNames), indexOnly: req.IndexOnly}
	w.summary.Fresh = fresh
	dirs := openRoots(req.Roots)
	defer closeRoots(dirs)
	// Asked before anything is looked at: whatever changes from now on is the next checkpoint's.
	reply := from.ask(state)
	if reply != nil && reply.roots != rootIds(dirs) {
		reply = nil
	}
	if reply != nil && !reply.full && !req.IndexOnly {
		reply.full = !addOpenWriters(reply, req, dirs)
	}
	sticky := &stickyWriter{to: out}
	w.out = tar.NewWriter(sticky)
	walkAll := req.IndexOnly || reply == nil || reply.full || state.deltas+1 >= walkEvery
	if walkAll || !w.walkDelta(dirs, reply) {
		w.walkAll(dirs)
	}
	if reply != nil {
		deltas := state.deltas + 1
		if !w.delta {
			deltas = 0
		}
		w.watch = &indexEntry{path: watchKey(reply.gen), st: treeStat{Kind: kindWatch, Size: int64(reply.epoch), Mtime: int64(deltas)}}
	}
	if req.IndexOnly {
		return w, nil
	}
	w.finish()
	if err := w.out.Close(); err != nil {
		checkpointFail("checkpoint: %v", err)
	}
	if sticky.err != nil {
		checkpointFail("checkpoint: %v", sticky.err)
	}
	return w, nil
}

// addOpenWriters marks the files the run's processes may be writing without an event; false
// when they cannot be known.
func addOpenWriters(reply *watchReply, req checkpointRequest, dirs []rootDir) bool {
	if !req.PidsKnown {
		return false
	}
	seen := map[uint64]bool{}
	for _, root := range dirs {
		if root.fd < 0 || seen[root.st.Dev] {
			continue
		}
		seen[root.st.Dev] = true
		inos, ok := inodesOpenForWriting(req.Pids, root.st.Dev)
		if !ok {
			return false
		}
		for _, ino := range inos {
			reply.inos[ino] = true
		}
	}
	return true
}

// stickyWriter keeps the first write error and takes nothing after it: a walk whose reader went
// away ends normally (closing what it opened) and says so at the end.
type stickyWriter struct {
	to  io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err == nil {
		_, s.err = s.to.Write(p)
	}
	return len(p), nil
}

func setOf(list string) map[string]bool {
	set := map[string]bool{}
	for _, item := range strings.Split(list, ",") {
		if item != "" {
			set[item] = true
		}
	}
	return set
}

// walkAll walks every file of the roots.
func (w *walker) walkAll(dirs []rootDir) {
	w.delta = false
	w.previous = w.base.toMap()
	w.next = map[string]treeStat{}
	for _, root := range dirs {
		w.walkRoot(root)
	}
}

// old is the last index's entry for path.
func (w *walker) old(path string) (treeStat, bool) {
	if w.delta {
		return w.base.get(path)
	}
	st, ok := w.previous[path]
	return st, ok
}

// rootDir is one of the trees, opened without following anything; fd -1 when it does not exist.
type rootDir struct {
	name string
	fd   int
	st   syscall.Stat_t
}

func openRoots(roots string) []rootDir {
	var dirs []rootDir
	for _, root := range strings.Split(roots, ",") {
		name, dir, ok := strings.Cut(root, "=")
		if !ok || name == "" || strings.Contains(name, "/") {
			closeRoots(dirs)
			checkpointFail("bad -root %q", root)
		}
		r, err := openRoot(name, dir)
		if err != nil {
			closeRoots(dirs)
			checkpointFail("checkpoint: %s: %v", dir, err)
		}
		dirs = append(dirs, r)
	}
	return dirs
}

func openRoot(name, dir string) (rootDir, error) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOENT) {
		return rootDir{name: name, fd: -1}, nil
	}
	if err != nil {
		return rootDir{}, err
	}
	r := rootDir{name: name, fd: fd}
	if err := syscall.Fstat(fd, &r.st); err != nil {
		syscall.Close(fd)
		return rootDir{}, err
	}
	return r, nil
}

func closeRoots(dirs []rootDir) {
	for _, root := range dirs {
		if root.fd >= 0 {
			syscall.Close(root.fd)
		}
	}
}

func (w *walker) walkRoot(root rootDir) {
	if root.fd < 0 {
		return
	}
	w.visit(root.name, root.st, 0)
	w.walkDir(root.fd, root.name, root.st.Dev)
}

func (w *walker) walkDir(dirfd int, prefix string, dev uint64) {
	names, err := readDirNames(dirfd)
	if err != nil {
		w.summary.Skipped++
		w.recheck(prefix)
		return
	}
	sort.Strings(names)
	for _, name := range names {
		path := prefix + "/" + name
		if w.excluded[path] || w.excludedNames[name] {
			continue
		}
		var st syscall.Stat_t
		if err := fstatat(dirfd, name, &st); err != nil || st.Dev != dev {
			// Gone meanwhile, or another filesystem mounted here: not the run's files.
			continue
		}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			w.walkSubdir(dirfd, name, path, st)
		case syscall.S_IFREG, syscall.S_IFLNK:
			w.visit(path, st, dirfd)
		}
	}
}

// walkSubdir walks the directory name of dirfd, opened without following anything and checked
// to be the one listed.
func (w *walker) walkSubdir(dirfd int, name, path string, st syscall.Stat_t) {
	child, err := syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		w.summary.Skipped++
		w.recheck(path)
		return
	}
	defer syscall.Close(child)
	var opened syscall.Stat_t
	if syscall.Fstat(child, &opened) != nil || opened.Ino != st.Ino || opened.Dev != st.Dev {
		w.summary.Skipped++
		w.recheck(path)
		return
	}
	w.visit(path, st, dirfd)
	w.walkDir(child, path, st.Dev)
}

// visit records an entry in the new index and, when it changed, in the tar stream.
func (w *walker) visit(path string, st syscall.Stat_t, dirfd int) {
	kind := kindOf(st.Mode)
	now := treeStat{Kind: kind, Mode: st.Mode & 07777, Size: st.Size, Ino: st.Ino,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}
	switch kind {
	case 'd':
		w.summary.Dirs++
		// A directory changes with its entries, which are compared themselves: its times change
		// too when a file comes and goes within a step (git's lock files), which changes nothing.
		now.Size, now.Mtime, now.Ctime = 0, 0, 0
	case 'f':
		w.summary.Files++
		w.summary.Bytes += st.Size
	case 'l':
		w.summary.Symlinks++
	}
	w.next[path] = now
	if old, ok := w.old(path); w.indexOnly || (ok && (old == now || (kind == 'f' && gitObject(path) && sameButTimes(old, now)))) {
		return
	}
	name := path[strings.LastIndex(path, "/")+1:]
	header := &tar.Header{Name: path, Mode: int64(now.Mode), ModTime: time.Unix(0, st.Mtim.Nano()), Format: tar.FormatPAX}
	switch kind {
	case 'd':
		header.Typeflag = tar.TypeDir
		w.write(header, nil)
	case 'l':
		target, err := readlinkat(dirfd, name)
		if err != nil {
			w.recheck(path)
			w.summary.Skipped++
			return
		}
		header.Typeflag, header.Linkname = tar.TypeSymlink, target
		w.write(header, nil)
	case 'f':
		w.writeFile(header, path, name, st, dirfd)
	}
	w.summary.Changed++
}

// writeFile copies a regular file opened without following anything; one that changed while it
// was read is written as it was read, and left out of the index so that the next walk reads it again.
func (w *walker) writeFile(header *tar.Header, path, name string, st syscall.Stat_t, dirfd int) {
	fd, err := syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	var opened syscall.Stat_t
	if err == nil && (syscall.Fstat(fd, &opened) != nil || opened.Ino != st.Ino || opened.Mode&syscall.S_IFMT != syscall.S_IFREG) {
		syscall.Close(fd)
		err = syscall.ESTALE
	}
	if err != nil {
		w.recheck(path)
		w.summary.Files--
		w.summary.Bytes -= st.Size
		w.summary.Skipped++
		return
	}
	file := os.NewFile(uintptr(fd), path)
	defer file.Close()
	header.Typeflag, header.Size = tar.TypeReg, st.Size
	if err := w.out.WriteHeader(header); err != nil {
		checkpointFail("checkpoint: %v", err)
	}
	copied, err := io.CopyN(w.out, file, st.Size)
	if copied < st.Size {
		// Shorter than it was: padded, and read again next time.
		if _, werr := w.out.Write(make([]byte, st.Size-copied)); werr != nil {
			checkpointFail("checkpoint: %v", werr)
		}
		err = io.ErrUnexpectedEOF
	}
	var after syscall.Stat_t
	if err != nil || syscall.Fstat(fd, &after) != nil || after.Ctim != st.Ctim || after.Size != st.Size {
		w.recheck(path)
	}
}

// recheck leaves a path in the index as one to look at again next time, whatever changes or not:
// it could not be read whole (it changed meanwhile, or went).
func (w *walker) recheck(path string) {
	w.next[path] = treeStat{Kind: kindRecheck}
}

func (w *walker) write(header *tar.Header, body []byte) {
	header.Size = int64(len(body))
	if err := w.out.WriteHeader(header); err != nil {
		checkpointFail("checkpoint: %v", err)
	}
	if _, err := w.out.Write(body); err != nil {
		checkpointFail("checkpoint: %v", err)
	}
}

// finish writes the paths gone since the last checkpoint (or left to look at again) and the summary.
func (w *walker) finish() {
	var deleted []string
	// A path read torn before (kindRecheck) and gone now is gone too: else the torn copy would stay.
	gone := func(path string, now treeStat, there bool) {
		if !there || now.Kind == kindRecheck || now.Kind == kindGone {
			deleted = append(deleted, path)
		}
	}
	if w.delta {
		for path, now := range w.next {
			if _, ok := w.base.get(path); ok {
				gone(path, now, true)
			}
		}
	} else {
		for path := range w.previous {
			now, ok := w.next[path]
			gone(path, now, ok)
		}
	}
	sort.Strings(deleted)
	w.summary.Deleted = len(deleted)
	w.write(&tar.Header{Name: ".agent-runs/deleted", Typeflag: tar.TypeReg, Mode: 0600}, []byte(strings.Join(deleted, "\x00")))
	summary, _ := json.Marshal(w.summary)
	w.write(&tar.Header{Name: ".agent-runs/summary", Typeflag: tar.TypeReg, Mode: 0600}, summary)
}

func (w *walker) saveIndex(file string) []byte {
	return w.nextIndex("").save(file)
}

// nextIndex is the index of the files as this walk saw them, as the index of checkpoint.
func (w *walker) nextIndex(checkpoint string) *indexWriter {
	var heads []indexEntry
	if checkpoint != "" {
		heads = append(heads, indexEntry{path: checkpointPrefix + checkpoint, st: treeStat{Kind: kindCheckpoint}})
	}
	if w.watch != nil {
		heads = append(heads, *w.watch)
	}
	if w.delta {
		return deltaIndex(heads, w.base, w.next)
	}
	index := w.next
	for _, head := range heads {
		index[head.path] = head.st
	}
	return wholeIndex(index)
}

// gitObject says whether a path is a loose object of a git repository: named by its content, it
// never changes, but git sets its times whenever it would write it again (freshening it against
// garbage collection), which the diff of every step does.
func gitObject(path string) bool {
	return strings.Contains(path, "/.git/objects/")
}

func sameButTimes(a, b treeStat) bool {
	a.Mtime, a.Ctime, b.Mtime, b.Ctime = 0, 0, 0, 0
	return a == b
}

func kindOf(mode uint32) byte {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return 'd'
	case syscall.S_IFLNK:
		return 'l'
	}
	return 'f'
}

// System calls package syscall does not wrap relative to a directory descriptor.

const atSymlinkNofollow = 0x100

func fstatat(dirfd int, name string, st *syscall.Stat_t) error {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	_, _, errno := syscall.Syscall6(syscall.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(st)), atSymlinkNofollow, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func readlinkat(dirfd int, name string) (string, error) {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return "", err
	}
	buf := make([]byte, 4096)
	n, _, errno := syscall.Syscall6(syscall.SYS_READLINKAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0)
	if errno != 0 {
		return "", errno
	}
	return string(buf[:n]), nil
}

// readDirNames lists a directory from its descriptor (which it leaves open).
func readDirNames(dirfd int) ([]string, error) {
	dup, err := syscall.Dup(dirfd)
	if err != nil {
		return nil, err
	}
	dir := os.NewFile(uintptr(dup), "dir")
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("readdir: %w", err)
	}
	return names, nil
}
