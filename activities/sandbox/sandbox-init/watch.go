package main

// `sandbox-init -watch <mountpoint> -socket <path> -root name=dir,...` is another program in this
// binary, run on the host side by the worker (as root) for as long as a run's own filesystem is
// mounted: it follows every change on that filesystem with fanotify (FAN_MARK_FILESYSTEM: every
// mount of it, the sandboxes' binds included) and keeps which paths under the roots changed, so
// that a checkpoint looks at those only (checkpoint_delta.go) instead of walking everything.
//
// A checkpoint asks on the Unix socket (root's only): `since <gen> <epoch>\n`, the watcher and
// epoch its last recorded index was handed. The watcher first reads every event already queued
// (the step's processes have returned from their system calls, so their events are), then
// answers (dirtyset.go):
//
//	<full|delta> <gen> <epoch>\n
//	roots <name>=<dev>:<ino>,...\n
//	records, each ending with NUL: t<path> (with everything under it), p<path>, i<inode>, then "."
//
// The paths come from the kernel's names of the run's files: they are untrusted, and the
// checkpoint opens them only below its roots, following nothing (checkpoint_delta.go).
//
// An event names a directory by its file handle and the entry by name; the directory's path is
// read when the event is, and may have changed since the event. That is safe: the rename that
// changed it is an event of its own, read later, whose old and new paths are then looked at with
// everything under them.

import (
	"archive/tar"
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// How long a hand-over reads queued events before it gives up on a delta (the next checkpoint
// then walks everything): a process writing without pause keeps the queue from emptying.
const handOverDrainLimit = 2 * time.Second

// How long a checkpoint's stream waits for the worker to record it (storing its last objects,
// then a row): past it, the next checkpoint starts from the last index again.
const commitWait = 10 * time.Minute

// The most paths and inodes kept between two checkpoints, and bytes of paths; past either, the
// next checkpoint walks everything.
const (
	watchLimit    = 200_000
	watchMaxBytes = 32 << 20
)

type watcher struct {
	mu      sync.Mutex
	fan     int
	mountFd int
	prefix  string
	// name -> directory relative to the mountpoint
	roots map[string]string
	set   *dirtySet
	gen   string
	// A directory's path by its handle, read once per hand-over; cleared whenever a directory moves or goes.
	dirs map[string]string
	buf  []byte
	// The index the last checkpoint taken here wrote (watch_index.go).
	last *cachedIndex
}

func watchMain(mountpoint, socket, roots string) {
	if sysOpenByHandleAt == 0 {
		fail(125, "watch: not supported on this architecture")
	}
	w := &watcher{roots: map[string]string{}, set: newDirtySet(watchLimit, watchMaxBytes), dirs: map[string]string{},
		buf: make([]byte, 256*1024)}
	for _, root := range strings.Split(roots, ",") {
		name, dir, ok := strings.Cut(root, "=")
		// One name each: its path below the mountpoint is looked up without following anything.
		if !ok || name == "" || strings.Contains(name, "/") || !validRelative(dir) || strings.Contains(dir, "/") {
			fail(125, "bad -root %q", root)
		}
		w.roots[name] = dir
	}
	w.start(mountpoint)
	listener := w.listen(socket)
	fmt.Println("ready")
	go w.follow()
	go func() {
		// The worker ends the watcher by closing its standard input (or dies, and it with it).
		buf := make([]byte, 64)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				os.Remove(socket)
				os.Exit(0)
			}
		}
	}()
	for {
		conn, err := listener.Accept()
		if err != nil {
			fail(125, "watch: %v", err)
		}
		w.serve(conn)
	}
}

// start marks the filesystem of mountpoint, which must be the root of its filesystem: a path
// read from a handle is then a path below it.
func (w *watcher) start(mountpoint string) {
	fd, err := syscall.Open(mountpoint, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		fail(125, "watch: %s: %v", mountpoint, err)
	}
	w.mountFd = fd
	if w.prefix, err = os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err != nil {
		fail(125, "watch: %v", err)
	}
	if !mountsWholeFilesystem(w.prefix) {
		fail(125, "watch: %s is not the root of a filesystem mounted there", w.prefix)
	}
	w.fan, err = fanotifyInit(fanCloexec|fanNonblock|fanReportFid|fanReportDirFid|fanReportName, uint(syscall.O_RDONLY|syscall.O_LARGEFILE|syscall.O_CLOEXEC))
	if err != nil {
		fail(125, "watch: fanotify_init: %v (Linux 5.9 or newer, and root, are needed)", err)
	}
	if err := fanotifyMark(w.fan, fanMarkAdd|fanMarkFilesystem, watchedEvents, fd); err != nil {
		fail(125, "watch: fanotify_mark: %v", err)
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		fail(125, "watch: %v", err)
	}
	w.gen = hex.EncodeToString(id[:])
}

// mountsWholeFilesystem: /proc/self/mountinfo has a mount at dir whose root is its filesystem's.
func mountsWholeFilesystem(dir string) bool {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	whole := false
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && unescapeMountinfo(fields[4]) == dir {
			// The last mount listed at a place is the one seen there.
			whole = unescapeMountinfo(fields[3]) == "/"
		}
	}
	return whole
}

func unescapeMountinfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func (w *watcher) listen(socket string) net.Listener {
	os.Remove(socket)
	// Made root's only: no moment with the umask's permissions.
	umask := syscall.Umask(0o077)
	listener, err := net.Listen("unix", socket)
	syscall.Umask(umask)
	if err != nil {
		fail(125, "watch: %v", err)
	}
	if err := os.Chmod(socket, 0600); err != nil {
		fail(125, "watch: %v", err)
	}
	return listener
}

// follow reads events as they come, a buffer at a time under the lock: a hand-over meanwhile
// waits for one buffer at most, then reads what is queued itself.
func (w *watcher) follow() {
	fds := []pollFd{{fd: int32(w.fan), events: pollIn}}
	for {
		if err := poll(fds); err != nil && err != syscall.EINTR {
			fail(125, "watch: poll: %v", err)
		}
		// Events come in bursts (a build, an install): read them a batch at a time, not one per
		// wake-up. Well below the kernel queue's 16,384 events at the rate one process makes them.
		time.Sleep(10 * time.Millisecond)
		for more := true; more; {
			w.mu.Lock()
			more = w.readBuffer()
			w.mu.Unlock()
		}
	}
}

// drainWithin reads every queued event into the set; false when the queue did not empty by
// deadline (a process writing without pause): the set then vouches for nothing.
func (w *watcher) drainWithin(deadline time.Time) bool {
	for w.readBuffer() {
		if time.Now().After(deadline) {
			w.set.lost()
			return false
		}
	}
	return true
}

// readBuffer reads one buffer of events into the set; false when none was queued.
func (w *watcher) readBuffer() bool {
	for {
		n, err := syscall.Read(w.fan, w.buf)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			return false
		}
		if err != nil || n <= 0 {
			fail(125, "watch: read: %v", err)
		}
		events, err := parseEvents(w.buf[:n])
		if err != nil {
			fail(125, "watch: %v", err)
		}
		for _, ev := range events {
			w.record(ev)
		}
		return true
	}
}

func (w *watcher) record(ev fanEvent) {
	if ev.mask&fanQOverflow != 0 {
		w.set.lost()
		return
	}
	if ev.handle != nil {
		w.recordInode(ev.handle)
	}
	if ev.dirHandle == nil {
		return
	}
	if ev.mask&fanOnDir != 0 && ev.mask&(fanMovedFrom|fanMovedTo|fanDelete) != 0 {
		w.dirs = map[string]string{}
	}
	if ev.mask&fanMovedTo != 0 && ev.mask&fanOnDir == 0 {
		w.recordMoved(ev.dirHandle, ev.name)
	}
	dir, err := w.dirPath(ev.dirHandle)
	if err != nil {
		// Not a directory gone meanwhile (whose own removal is an event): nothing can be vouched for.
		w.set.lost()
		return
	}
	if dir == "\x00" {
		return
	}
	path := dir
	if ev.name != "." {
		path = joinPath(dir, ev.name)
	}
	if rooted, ok := w.underRoot(path); ok {
		w.set.markPath(rooted, ev.mask&direntEvents != 0)
	}
}

// recordInode: a file's other names (hard links) changed with it; the checkpoint finds them by inode.
func (w *watcher) recordInode(handle []byte) {
	if ino, ok := handleInode(handle); ok {
		w.set.markInode(ino)
		return
	}
	fd, err := openByHandleAt(w.mountFd, handle, oPath|syscall.O_CLOEXEC)
	if err == syscall.ESTALE {
		return
	}
	if err != nil {
		w.set.lost()
		return
	}
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) == nil {
		w.set.markInode(st.Ino)
	} else {
		w.set.lost()
	}
	syscall.Close(fd)
}

// recordMoved: a rename changes the renamed file's change time, which its other names (hard
// links, in or out of the roots) show, and its event names only the new one: the file's inode is
// marked too. One renamed again or gone since has an event of its own for that.
func (w *watcher) recordMoved(dirHandle []byte, name string) {
	fd, err := openByHandleAt(w.mountFd, dirHandle, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC)
	if err == syscall.ESTALE || err == syscall.ENOENT {
		return
	}
	if err != nil {
		w.set.lost()
		return
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if fstatat(fd, name, &st) == nil && st.Mode&syscall.S_IFMT != syscall.S_IFDIR && st.Nlink > 1 {
		w.set.markInode(st.Ino)
	}
}

// dirPath is the directory's path relative to the mountpoint ("" for its root), or "\x00" for
// one that is gone (its removal, or its parent's, is an event of its own).
func (w *watcher) dirPath(handle []byte) (string, error) {
	if path, ok := w.dirs[string(handle)]; ok {
		return path, nil
	}
	fd, err := openByHandleAt(w.mountFd, handle, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC)
	if err == syscall.ESTALE || err == syscall.ENOENT {
		return "\x00", nil
	}
	if err != nil {
		return "", err
	}
	defer syscall.Close(fd)
	full, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return "", err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return "", err
	}
	path := "\x00"
	if st.Nlink > 0 {
		if full == w.prefix {
			path = ""
		} else if rel, ok := strings.CutPrefix(full, w.prefix+"/"); ok {
			path = rel
		} else if w.prefix == "/" {
			path = strings.TrimPrefix(full, "/")
		} else {
			return "", errors.New("a directory outside the mountpoint")
		}
	}
	if len(w.dirs) >= 1024 {
		w.dirs = map[string]string{}
	}
	w.dirs[string(handle)] = path
	return path, nil
}

// underRoot maps a path relative to the mountpoint to the root it is under: "workspace/src" to
// "workspace/src" for the root workspace=workspace.
func (w *watcher) underRoot(path string) (string, bool) {
	for name, dir := range w.roots {
		if path == dir {
			return name, true
		}
		if rest, ok := strings.CutPrefix(path, dir+"/"); ok {
			return name + "/" + rest, true
		}
	}
	return "", false
}

// serve answers one request: `since <gen> <epoch>` (a checkpoint process asks what changed), or
// `checkpoint <json>` (a checkpointRequest): the watcher takes the checkpoint itself and writes its
// tar stream back, as `sandbox-init -checkpoint` would to its output, without a process to start.
func (w *watcher) serve(conn net.Conn) {
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	verb, rest, _ := strings.Cut(readLine(conn), " ")
	conn.SetReadDeadline(time.Time{})
	switch verb {
	case "since":
		w.answerSince(conn, strings.Fields(rest))
	case "checkpoint":
		w.checkpoint(conn, rest)
	}
}

// readLine reads up to a newline, byte by byte: nothing past it is taken from the connection.
func readLine(conn net.Conn) string {
	var line []byte
	b := make([]byte, 1)
	for len(line) < 64*1024 {
		if n, err := conn.Read(b); n == 0 || err != nil || b[0] == '\n' {
			break
		}
		line = append(line, b[0])
	}
	return string(line)
}

func (w *watcher) answerSince(conn net.Conn, fields []string) {
	if len(fields) != 2 {
		return
	}
	out := w.handOver(watchState{gen: fields[0], epoch: parseEpoch(fields[1])})
	reply := bufio.NewWriterSize(conn, 64*1024)
	kind := "delta"
	if out.Full {
		kind = "full"
	}
	fmt.Fprintf(reply, "%s %s %d\nroots %s\n", kind, w.gen, out.Epoch, w.rootIds())
	paths := make([]string, 0, len(out.Paths))
	for path := range out.Paths {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		flag := "p"
		if out.Paths[path] {
			flag = "t"
		}
		reply.WriteString(flag + path + "\x00")
	}
	for _, ino := range out.Inos {
		reply.WriteString("i" + strconv.FormatUint(ino, 10) + "\x00")
	}
	reply.WriteString(".\x00")
	reply.Flush()
}

func parseEpoch(field string) uint64 {
	epoch, err := strconv.ParseUint(field, 10, 64)
	if err != nil {
		return 0
	}
	return epoch
}

// handOver reads every event queued, then hands over what changed since state (everything, for
// another generation's state).
func (w *watcher) handOver(state watchState) handover {
	since := state.epoch
	if state.gen != w.gen {
		since = 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drainWithin(time.Now().Add(handOverDrainLimit))
	out := w.set.handOver(since)
	w.dirs = map[string]string{}
	return out
}

// checkpoint takes a checkpoint in this process (runCheckpoint) and writes its tar stream to
// conn, then ends its side; a failure ends the stream with `.agent-runs/error` saying why. The
// worker says `commit <checkpoint>` once it has recorded the checkpoint (or the last one, when
// nothing changed), and the next index is saved then, as that checkpoint's (while the worker
// goes on: its next request is served after this one); anything else, or nothing within
// commitWait, and the last index stays.
func (w *watcher) checkpoint(conn net.Conn, request string) {
	var req checkpointRequest
	var walked *walker
	out := bufio.NewWriterSize(conn, 256*1024)
	err := json.Unmarshal([]byte(request), &req)
	if err == nil {
		walked, err = runCheckpoint(req, out, checkpointSources{readIndex: w.readIndex, ask: w.reply})
	}
	if err != nil {
		out.Reset(conn)
		writeTarError(out, err)
	}
	if out.Flush() != nil || err != nil {
		return
	}
	if unix, ok := conn.(*net.UnixConn); ok {
		unix.CloseWrite()
	}
	conn.SetReadDeadline(time.Now().Add(commitWait))
	if id, ok := strings.CutPrefix(readLine(conn), "commit "); ok && id != "" {
		w.commit(req.Index, walked.nextIndex(id))
	}
}

func writeTarError(out io.Writer, err error) {
	tw := tar.NewWriter(out)
	message := []byte(err.Error())
	tw.WriteHeader(&tar.Header{Name: ".agent-runs/error", Typeflag: tar.TypeReg, Mode: 0600, Size: int64(len(message))})
	tw.Write(message)
	tw.Close()
}

// reply is the hand-over as a checkpoint asking over the socket would read it.
func (w *watcher) reply(state watchState) *watchReply {
	out := w.handOver(state)
	reply := &watchReply{full: out.Full, gen: w.gen, epoch: out.Epoch, roots: w.rootIds(),
		paths: out.Paths, inos: map[uint64]bool{}}
	for _, ino := range out.Inos {
		reply.inos[ino] = true
	}
	return reply
}

// rootIds: each root's device and inode, for the checkpoint to check that its roots are these.
func (w *watcher) rootIds() string {
	var ids []string
	for name, dir := range w.roots {
		var st syscall.Stat_t
		if fstatat(w.mountFd, dir, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			ids = append(ids, fmt.Sprintf("%s=%d:%d", name, st.Dev, st.Ino))
		} else {
			ids = append(ids, name+"=-")
		}
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// validRelative: a relative path of plain names (no "", ".", "..").
func validRelative(path string) bool {
	for _, part := range strings.Split(path, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

const pollIn = 0x1

func poll(fds []pollFd) error {
	_, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), 0, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
