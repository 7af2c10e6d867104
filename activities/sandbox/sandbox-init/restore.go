package main

// `sandbox-init -restore` is another program in this binary, run on the host side by the worker
// (as root) on a run's fresh filesystem: it reads a tar stream of a checkpoint (as the worker
// composes it from the object store) on standard input and makes its entries under the roots it
// is given (`workspace/...` under the workspace, `home/...` under the home), owned by the
// sandbox's uid, with their modes and modification times. Every entry is made relative to its
// parent directory's descriptor, never following a symlink: a checkpoint holds symlinks as
// links, and none of them leads a later entry anywhere.

import (
	"archive/tar"
	"bufio"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"unsafe"
)

type restorer struct {
	roots map[string]int
	uid   int
	gid   int
	// Directories' modes and times, set once everything in them is made (a 0555 directory would refuse its entries).
	dirs []restoredDir
}

type restoredDir struct {
	path  string
	mode  uint32
	mtime syscall.Timespec
}

func restoreMain(roots string, uid, gid int) {
	r := &restorer{roots: map[string]int{}, uid: uid, gid: gid}
	for _, root := range strings.Split(roots, ",") {
		name, dir, ok := strings.Cut(root, "=")
		if !ok {
			fail(125, "bad -root %q", root)
		}
		fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != nil {
			fail(125, "restore: %s: %v", dir, err)
		}
		r.roots[name] = fd
	}
	in := tar.NewReader(bufio.NewReaderSize(os.Stdin, 256*1024))
	for {
		header, err := in.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fail(125, "restore: %v", err)
		}
		r.entry(header, in)
	}
	for i := len(r.dirs) - 1; i >= 0; i-- {
		r.finishDir(r.dirs[i])
	}
}

func (r *restorer) entry(header *tar.Header, body io.Reader) {
	parts := strings.Split(header.Name, "/")
	rootfd, known := r.roots[parts[0]]
	for _, part := range parts[1:] {
		if part == "" || part == "." || part == ".." {
			known = false
		}
	}
	if !known {
		fail(125, "restore: %q is not a path under a root", header.Name)
	}
	mode := uint32(header.Mode) & 07777
	if len(parts) == 1 {
		if header.Typeflag == tar.TypeDir {
			r.dirs = append(r.dirs, restoredDir{header.Name, mode, syscall.NsecToTimespec(header.ModTime.UnixNano())})
		}
		return
	}
	parent := r.openParent(rootfd, parts[1:len(parts)-1], header.Name)
	defer syscall.Close(parent)
	name := parts[len(parts)-1]
	switch header.Typeflag {
	case tar.TypeDir:
		if err := syscall.Mkdirat(parent, name, 0700); err != nil && !errors.Is(err, syscall.EEXIST) {
			fail(125, "restore: %s: %v", header.Name, err)
		}
		r.dirs = append(r.dirs, restoredDir{header.Name, mode, syscall.NsecToTimespec(header.ModTime.UnixNano())})
	case tar.TypeSymlink:
		unlinkat(parent, name)
		if err := symlinkat(header.Linkname, parent, name); err != nil {
			fail(125, "restore: %s: %v", header.Name, err)
		}
		r.own(parent, name)
		setTimes(parent, name, header)
	case tar.TypeReg:
		unlinkat(parent, name)
		fd, err := syscall.Openat(parent, name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0600)
		if err != nil {
			fail(125, "restore: %s: %v", header.Name, err)
		}
		file := os.NewFile(uintptr(fd), header.Name)
		if err := copySparse(file, body, header.Size); err != nil {
			fail(125, "restore: %s: %v", header.Name, err)
		}
		if r.uid >= 0 {
			if err := file.Chown(r.uid, r.gid); err != nil {
				fail(125, "restore: %s: %v", header.Name, err)
			}
		}
		if err := file.Chmod(os.FileMode(mode&0777) | setBits(mode)); err != nil {
			fail(125, "restore: %s: %v", header.Name, err)
		}
		file.Close()
		setTimes(parent, name, header)
	default:
		fail(125, "restore: %s: entries of type %q are not restored", header.Name, header.Typeflag)
	}
}

// openParent opens the directory an entry goes in, making what is missing; none of its
// components may be a symlink.
func (r *restorer) openParent(rootfd int, dirs []string, name string) int {
	fd, err := syscall.Dup(rootfd)
	if err != nil {
		fail(125, "restore: %v", err)
	}
	for _, dir := range dirs {
		if err := syscall.Mkdirat(fd, dir, 0700); err != nil && !errors.Is(err, syscall.EEXIST) {
			fail(125, "restore: %s: %v", name, err)
		}
		next, err := syscall.Openat(fd, dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		syscall.Close(fd)
		if err != nil {
			fail(125, "restore: %s: %v", name, err)
		}
		fd = next
	}
	return fd
}

func (r *restorer) finishDir(dir restoredDir) {
	parts := strings.Split(dir.path, "/")
	fd := r.openParent(r.roots[parts[0]], parts[1:], dir.path)
	defer syscall.Close(fd)
	if r.uid >= 0 {
		if err := syscall.Fchown(fd, r.uid, r.gid); err != nil {
			fail(125, "restore: %s: %v", dir.path, err)
		}
	}
	if err := syscall.Fchmod(fd, dir.mode); err != nil {
		fail(125, "restore: %s: %v", dir.path, err)
	}
	syscall.UtimesNano("/proc/self/fd/"+itoa(fd), []syscall.Timespec{dir.mtime, dir.mtime})
}

func (r *restorer) own(parent int, name string) {
	if r.uid < 0 {
		return
	}
	if err := fchownat(parent, name, r.uid, r.gid); err != nil {
		fail(125, "restore: %s: %v", name, err)
	}
}

func setBits(mode uint32) os.FileMode {
	var bits os.FileMode
	if mode&04000 != 0 {
		bits |= os.ModeSetuid
	}
	if mode&02000 != 0 {
		bits |= os.ModeSetgid
	}
	if mode&01000 != 0 {
		bits |= os.ModeSticky
	}
	return bits
}

func setTimes(parent int, name string, header *tar.Header) {
	t := syscall.NsecToTimespec(header.ModTime.UnixNano())
	utimensat(parent, name, []syscall.Timespec{t, t})
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var digits []byte
	for ; n > 0; n /= 10 {
		digits = append([]byte{byte('0' + n%10)}, digits...)
	}
	return string(digits)
}

func unlinkat(dirfd int, name string) {
	p, _ := syscall.BytePtrFromString(name)
	syscall.Syscall(syscall.SYS_UNLINKAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), 0)
}

func symlinkat(target string, dirfd int, name string) error {
	t, err := syscall.BytePtrFromString(target)
	if err != nil {
		return err
	}
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_SYMLINKAT, uintptr(unsafe.Pointer(t)), uintptr(dirfd), uintptr(unsafe.Pointer(p))); errno != 0 {
		return errno
	}
	return nil
}

func fchownat(dirfd int, name string, uid, gid int) error {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	if _, _, errno := syscall.Syscall6(syscall.SYS_FCHOWNAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(uid), uintptr(gid), atSymlinkNofollow, 0); errno != 0 {
		return errno
	}
	return nil
}

func utimensat(dirfd int, name string, times []syscall.Timespec) {
	p, _ := syscall.BytePtrFromString(name)
	syscall.Syscall6(syscall.SYS_UTIMENSAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&times[0])), atSymlinkNofollow, 0, 0)
}

// sparseBlock is the unit copySparse looks at: a block of zeros in it is skipped, not written.
const sparseBlock = 64 * 1024

// copySparse writes `size` bytes from body to file, leaving a hole wherever a whole block is
// zeros (as `cp --sparse=always` does): a sparse file (a truncated 1 GiB file, a database's
// preallocation) takes back on restore no more of the run's disk than it took before.
func copySparse(file *os.File, body io.Reader, size int64) error {
	buf := make([]byte, sparseBlock)
	var written int64
	for written < size {
		n, err := io.ReadFull(body, buf[:min64(sparseBlock, size-written)])
		if n > 0 {
			if allZero(buf[:n]) {
				if _, serr := file.Seek(int64(n), io.SeekCurrent); serr != nil {
					return serr
				}
			} else if _, werr := file.Write(buf[:n]); werr != nil {
				return werr
			}
			written += int64(n)
		}
		if err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			return err
		}
	}
	// A file that ends in a hole: its size, not only what was written.
	return file.Truncate(written)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}
