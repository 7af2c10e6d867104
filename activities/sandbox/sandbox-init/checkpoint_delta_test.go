package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// walkResult is what a checkpoint writes: the entries of its tar stream (path and, for a file,
// its bytes), the deleted paths, and the new index.
type walkResult struct {
	changed map[string]string
	deleted []string
	next    map[string]treeStat
}

// newTestWalker starts a checkpoint from previous, written to an index file and read back as a checkpoint reads it.
func newTestWalker(t *testing.T, previous map[string]treeStat) (*walker, *bytes.Buffer) {
	var out bytes.Buffer
	file := filepath.Join(t.TempDir(), "index")
	writeIndex(file, previous)
	base, _ := readIndex(file)
	w := &walker{base: base, next: map[string]treeStat{}, excluded: map[string]bool{"home/.cache": true},
		excludedNames: map[string]bool{"skip-me": true}}
	w.out = tar.NewWriter(&out)
	return w, &out
}

// checkpoint runs one checkpoint of dir's workspace and home from previous: with reply, as the
// watcher's hand-over makes it; without, the full walk.
func checkpoint(t *testing.T, dir string, previous map[string]treeStat, reply *watchReply) walkResult {
	t.Helper()
	w, out := newTestWalker(t, previous)
	dirs := openRoots("workspace=" + filepath.Join(dir, "workspace") + ",home=" + filepath.Join(dir, "home"))
	defer func() {
		for _, r := range dirs {
			if r.fd >= 0 {
				syscall.Close(r.fd)
			}
		}
	}()
	if reply == nil || !w.walkDelta(dirs, reply) {
		if reply != nil {
			t.Fatalf("the delta was refused")
		}
		w.walkAll(dirs)
	}
	w.finish()
	w.out.Close()
	index := filepath.Join(t.TempDir(), "next")
	w.saveIndex(index)
	next, _ := readIndex(index)
	result := walkResult{changed: map[string]string{}, next: next.toMap()}
	entries := tar.NewReader(out)
	for {
		h, err := entries.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(entries)
		switch h.Name {
		case ".agent-runs/deleted":
			if len(body) > 0 {
				result.deleted = strings.Split(string(body), "\x00")
			}
		case ".agent-runs/summary":
		default:
			result.changed[h.Name] = string(h.Typeflag) + " " + h.Linkname + string(body)
		}
	}
	return result
}

type tree struct {
	t   *testing.T
	dir string
}

func (tr tree) path(p string) string { return filepath.Join(tr.dir, p) }

func (tr tree) write(p, content string) {
	tr.t.Helper()
	os.MkdirAll(filepath.Dir(tr.path(p)), 0755)
	if err := os.WriteFile(tr.path(p), []byte(content), 0644); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr tree) must(err error) {
	tr.t.Helper()
	if err != nil {
		tr.t.Fatal(err)
	}
}

func newTree(t *testing.T) (tree, map[string]treeStat) {
	tr := tree{t, t.TempDir()}
	tr.write("workspace/src/a.txt", "a")
	tr.write("workspace/src/lib/b.txt", "b")
	tr.write("workspace/src/lib/deep/c.txt", "c")
	tr.write("workspace/docs/d.txt", "d")
	tr.write("workspace/skip-me/x", "x")
	tr.write("home/.cache/big", "cache")
	tr.write("home/.bashrc", "rc")
	tr.must(os.Symlink("src/a.txt", tr.path("workspace/link")))
	return tr, checkpoint(t, tr.dir, map[string]treeStat{}, nil).next
}

// compare takes the checkpoint with the watcher's paths and with the full walk: both must write
// and delete the same, and leave the same index.
func compare(t *testing.T, tr tree, previous map[string]treeStat, paths map[string]bool, inos ...uint64) walkResult {
	t.Helper()
	reply := &watchReply{paths: paths, inos: map[uint64]bool{}}
	for _, ino := range inos {
		reply.inos[ino] = true
	}
	delta := checkpoint(t, tr.dir, previous, reply)
	full := checkpoint(t, tr.dir, previous, nil)
	if !reflect.DeepEqual(delta.changed, full.changed) || !reflect.DeepEqual(delta.deleted, full.deleted) {
		t.Fatalf("delta wrote %v deleted %v; the full walk wrote %v deleted %v", keys(delta.changed), delta.deleted, keys(full.changed), full.deleted)
	}
	if !reflect.DeepEqual(delta.next, full.next) {
		t.Fatalf("the indexes differ:\n%v\n%v", delta.next, full.next)
	}
	return full
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func inode(t *testing.T, path string) uint64 {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// Each case changes the tree and hands the delta what the watcher reports for that change.
func TestADeltaCheckpointWritesWhatTheFullWalkWrites(t *testing.T) {
	cases := map[string]func(tr tree) map[string]bool{
		"modify": func(tr tree) map[string]bool {
			tr.write("workspace/src/lib/b.txt", "b2")
			return map[string]bool{"workspace/src/lib/b.txt": false}
		},
		"create in a new directory": func(tr tree) map[string]bool {
			tr.write("workspace/new/dir/n.txt", "n")
			return map[string]bool{"workspace/new": true, "workspace/new/dir": true, "workspace/new/dir/n.txt": true}
		},
		"delete a tree (its entries' events name directories gone by then)": func(tr tree) map[string]bool {
			tr.must(os.RemoveAll(tr.path("workspace/src")))
			return map[string]bool{"workspace/src": true}
		},
		"rename a directory with everything under it": func(tr tree) map[string]bool {
			tr.must(os.Rename(tr.path("workspace/src"), tr.path("workspace/moved")))
			return map[string]bool{"workspace/src": true, "workspace/moved": true}
		},
		"swap two directories": func(tr tree) map[string]bool {
			tr.must(os.Rename(tr.path("workspace/src"), tr.path("workspace/tmp")))
			tr.must(os.Rename(tr.path("workspace/docs"), tr.path("workspace/src")))
			tr.must(os.Rename(tr.path("workspace/tmp"), tr.path("workspace/docs")))
			return map[string]bool{"workspace/src": true, "workspace/docs": true, "workspace/tmp": true}
		},
		"a directory moved away, changed there, and moved back": func(tr tree) map[string]bool {
			tr.must(os.Rename(tr.path("workspace/src"), tr.path("workspace/away")))
			tr.write("workspace/away/lib/new.txt", "new")
			tr.must(os.Rename(tr.path("workspace/away"), tr.path("workspace/src")))
			// The new file's directory was read while it was away.
			return map[string]bool{"workspace/src": true, "workspace/away": true, "workspace/away/lib/new.txt": true}
		},
		"rename a tree in from out of the roots": func(tr tree) map[string]bool {
			tr.write("tmp/outside/o.txt", "o")
			tr.must(os.Rename(tr.path("tmp/outside"), tr.path("workspace/in")))
			return map[string]bool{"workspace/in": true}
		},
		"chmod": func(tr tree) map[string]bool {
			tr.must(os.Chmod(tr.path("workspace/src/lib"), 0700))
			tr.must(os.Chmod(tr.path("workspace/src/a.txt"), 0600))
			return map[string]bool{"workspace/src/lib": false, "workspace/src/a.txt": false}
		},
		"a symlink retargeted": func(tr tree) map[string]bool {
			tr.must(os.Remove(tr.path("workspace/link")))
			tr.must(os.Symlink("docs", tr.path("workspace/link")))
			return map[string]bool{"workspace/link": true}
		},
		"a directory replaced by a file and a file by a directory": func(tr tree) map[string]bool {
			tr.must(os.RemoveAll(tr.path("workspace/src/lib")))
			tr.write("workspace/src/lib", "now a file")
			tr.must(os.Remove(tr.path("workspace/docs/d.txt")))
			tr.write("workspace/docs/d.txt/inner", "now a dir")
			return map[string]bool{"workspace/src/lib": true, "workspace/docs/d.txt": true, "workspace/docs/d.txt/inner": true}
		},
		"changes left out of checkpoints": func(tr tree) map[string]bool {
			tr.write("home/.cache/big", "more")
			tr.write("workspace/skip-me/x", "more")
			tr.write("home/.bashrc", "rc2")
			return map[string]bool{"home/.cache/big": false, "workspace/skip-me/x": false, "home/.bashrc": false}
		},
		"a root's own mode": func(tr tree) map[string]bool {
			tr.must(os.Chmod(tr.path("workspace"), 0750))
			return map[string]bool{"workspace": false}
		},
		"nothing": func(tr tree) map[string]bool { return map[string]bool{} },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			tr, previous := newTree(t)
			result := compare(t, tr, previous, change(tr))
			if name != "nothing" && name != "changes left out of checkpoints" && len(result.changed)+len(result.deleted) == 0 {
				t.Fatalf("the change was not seen at all")
			}
		})
	}
}

func TestAFileChangedThroughAnotherNameIsFoundByItsInode(t *testing.T) {
	tr, _ := newTree(t)
	tr.must(os.MkdirAll(tr.path("tmp"), 0755))
	tr.must(os.Link(tr.path("workspace/docs/d.txt"), tr.path("tmp/other-name")))
	tr.must(os.Link(tr.path("workspace/docs/d.txt"), tr.path("workspace/src/second-name")))
	previous := checkpoint(t, tr.dir, map[string]treeStat{}, nil).next
	f, err := os.OpenFile(tr.path("tmp/other-name"), os.O_APPEND|os.O_WRONLY, 0)
	tr.must(err)
	f.WriteString("through the other name")
	f.Close()
	// The event names tmp/other-name, out of the roots: only its inode is handed over.
	result := compare(t, tr, previous, map[string]bool{}, inode(t, tr.path("tmp/other-name")))
	if len(result.changed) != 2 {
		t.Fatalf("wrote %v", keys(result.changed))
	}
}

func TestWhatACheckpointCouldNotReadIsLookedAtAgainByTheNext(t *testing.T) {
	tr, previous := newTree(t)
	// As a walk leaves it when a file changed while it was read.
	previous["workspace/docs/d.txt"] = treeStat{Kind: kindRecheck}
	result := compare(t, tr, previous, map[string]bool{})
	if _, ok := result.changed["workspace/docs/d.txt"]; !ok {
		t.Fatalf("not written again: %v", keys(result.changed))
	}
}

func TestAFileReadTornAndGoneSinceIsDeleted(t *testing.T) {
	tr, previous := newTree(t)
	// Read torn by the last checkpoint (its manifest holds that copy), deleted since.
	previous["workspace/docs/d.txt"] = treeStat{Kind: kindRecheck}
	tr.must(os.Remove(tr.path("workspace/docs/d.txt")))
	result := compare(t, tr, previous, map[string]bool{"workspace/docs/d.txt": false})
	if !reflect.DeepEqual(result.deleted, []string{"workspace/docs/d.txt"}) {
		t.Fatalf("deleted %v: the torn copy would come back on a restore", result.deleted)
	}
}

func TestADeltaFollowsNoSymlinkAndRefusesPathsItCannotMakeSenseOf(t *testing.T) {
	tr, previous := newTree(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0644)
	tr.must(os.RemoveAll(tr.path("workspace/docs")))
	tr.must(os.Symlink(outside, tr.path("workspace/docs")))
	// The run names the file through the symlink it made; the checkpoint must not read it.
	result := compare(t, tr, previous, map[string]bool{"workspace/docs": true, "workspace/docs/secret": false})
	for path, body := range result.changed {
		if strings.Contains(body, "secret") && path != "workspace/docs" {
			t.Fatalf("read %s through the symlink", path)
		}
	}
	for _, bad := range []string{"workspace/../etc", "workspace//x", "elsewhere/x", "workspace/./x"} {
		w, _ := newTestWalker(t, previous)
		dirs := openRoots("workspace=" + tr.path("workspace") + ",home=" + tr.path("home"))
		if w.walkDelta(dirs, &watchReply{paths: map[string]bool{bad: false}}) {
			t.Fatalf("%q was taken", bad)
		}
	}
}
